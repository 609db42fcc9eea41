// plan/activation_items.h — the activations this trainer keeps, tensor by tensor (claims C4, C5, C27, C28):
// for one block and one micro-batch every saved tensor with its element count and bytes, and the head's;
// which tensors each policy keeps (attention kernel, recompute); the activation peak of a chunk that runs
// one micro-batch at a time; and, beside them, the chapter's s·b·h·(34 + 5·a·s/h) with every difference
// named. The model books exactly these tensors in the memory ledger under the same names
// (model/activation_record.h), so `plan --ledger` compares them byte for byte.
//
// Legend: s sequence, b micro-batch, h hidden, a heads, L layers, V vocab, t tensor-parallel ranks (the
// formulas show /t where a tensor is split), c context-parallel ranks (every tensor holds s/c positions of each
// sample: the formulas show (s/c) for s; attention's keys still span s); w bytes per saved activation
// (2 with --mixed bf16, 4 in f32, 8 in f64), w_s bytes of the statistics kept in the compute type
// (LayerNorm mean and rstd, flash attention's log-sum-exp, the loss's probabilities: 4, or 8 in f64).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/activation_policy.h"
#include "plan/state_bytes.h"

namespace shardlab::plan {

struct ActivationShape {
  std::uint64_t seq = 64, micro_batch = 1, hidden = 128, heads = 4, layers = 4, vocab = 256;
  std::uint64_t width = 4;       // w
  std::uint64_t stat_width = 4;  // w_s
  AttentionKernel attention = AttentionKernel::naive;
  Recompute recompute = Recompute::none;
  double dropout = 0.0;
  std::uint64_t tp = 1;            // t: the tensors inside the tp regions hold a/t heads, h/t and 4h/t columns
  bool sequence_parallel = false;  // and the ones outside (LN, residual, the head) s/t positions
  std::uint64_t cp = 1;            // c: every tensor holds s/c positions of each sample (ring attention)
  ExpertDims moe;                  // experts in place of some blocks' MLP (plan/moe_items.h; off by default)
  std::uint64_t positions() const { return seq / cp; }  // tokens per sample on this rank
};

struct ActivationItem {
  std::string name;                       // the ledger's item name, e.g. "block.qkv"
  std::string what;                       // "LN1 output: the QKV projection's input"
  std::string formula;                    // "s·b·h · w"
  std::uint64_t elements = 0, bytes = 0;  // per layer (or for the head) per micro-batch
  bool kept = true;  // still held when the forward has passed (false: freed, recomputed in backward)
};

// Every tensor a dense block allocates for one micro-batch (kept or transient), in the block's order (a MoE
// block's: plan/moe_items.h).
std::vector<ActivationItem> block_items(const ActivationShape& s);
// The head's tensors (input, final LN, its statistics, the probabilities).
std::vector<ActivationItem> head_items(const ActivationShape& s);
// Bytes one block keeps per micro-batch between its forward and its backward.
std::uint64_t kept_block_bytes(const ActivationShape& s);
// The activation peak of a chunk of `blocks` blocks (and the head when `head`) running micro-batches one at
// a time (forward then backward): the model's allocation order, step by step.
std::uint64_t activation_peak(const ActivationShape& s, std::uint64_t blocks, bool head);

// The chapter's estimate for the same shape: 34·s·b·h + 5·a·s²·b bytes per layer (2-byte activations) —
// with tensor parallelism Megatron's table (Korthikanti et al. 2022, "Reducing Activation Recomputation in
// Large Transformer Models", Table 2): s·b·h·(10 + 24/t + 5·a·s/(h·t)), with sequence parallelism
// s·b·h·(34/t + 5·a·s/(h·t)), the s² term dropped under selective recompute, 2·s·b·h under full; with context
// parallelism the same with s/c tokens in place of s (the s² term: the local tiles, (s/c)·s) — and the named
// differences between it and what this trainer keeps.
std::uint64_t chapter_block_bytes(const ActivationShape& s);
std::string chapter_block_formula(const ActivationShape& s);  // e.g. "s·b·h·(10 + 24/t + 5·a·s/(h·t))"
std::vector<std::string> differences_from_chapter(const ActivationShape& s);

}  // namespace shardlab::plan
