// plan/layout_search.h — every way to lay a training step out on N GPUs (claims C26, C29): dp × tp × pp × cp × ep = N,
// a ZeRO stage (0 = plain DP, 1, 2, 3), a micro-batch size b and count m with b·m·dp·ep = B (the trainer's rule:
// expert-parallel ranks take their own samples), recompute none/selective/full and the attention kernel naive/flash;
// which of them the trainer would refuse, and the memory each needs per GPU, from the chapter's formulas.
//
// The trainer's rules (train/train_config.cpp, parallel/pipeline_partition.cpp): heads % tp = 0 and tp divides the
// ranks per node (tensor parallelism stays inside a node, C19); pp ≤ layers (stages hold whole layers, uneven splits
// allowed: the largest stage counts); cp > 1 cuts s into 2c zigzag chunks (s % 2c = 0) and runs ring attention on the
// flash kernel; ep > 1 only with experts, E % ep = 0, and experts never with cp or sequence parallelism; sequence
// parallelism (SP) with tp > 1 and (s/c) % tp = 0; B % (dp·ep·b) = 0. Left out: FSDP hybrid, the interleaved schedule
// (1F1B only: GPipe has its bubble and more memory) and the trainer's cap on pipeline message tags.
//
// Memory per GPU (1 GB = 1e9 bytes), the chapter's estimate:
//   model states  plan/sharding.h's per-rank bytes for the stage's slice Ψ_slice over the gradient group dp·cp, the
//                 recipe fixed to the chapter's (AdamW, bf16 with fp32 master: 16 B/param, C1); Ψ_slice = Ψ/(tp·pp)
//                 for a preset (as plan's 3D line), the largest stage's parameters (plan/pipeline_stages.h) otherwise:
//                 with experts its dense part and E/ep experts of each of its MoE blocks (C25, the per-rank count of
//                 `plan --ep`), ZeRO sharding them over dp·cp, the ranks that hold the same experts
//                 (parallel/across_ep.cpp)
//   activations   plan/activation_items.h's chapter_block_bytes (Korthikanti's table with t, SP, c and recompute; flash
//                 keeps no s² term, C5) per block — a MoE block's with the MLP's swapped for the router's and experts'
//                 items at an even load (plan/search_experts.h) — summed over the stage with the most, × micro-batches
//                 in flight (1F1B: min(p, m), C21)
// Left out: embeddings, the head and logits, workspace and fragmentation (plan/memory_need.h counts the trainer's),
// and an uneven load's extra expert rows.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/activation_policy.h"
#include "optim/strategy.h"
#include "plan/state_bytes.h"

namespace shardlab::plan {

// The model the search lays out: a preset (Ψ its round number) or the trainer's GPT dims (Ψ counted).
struct SearchModel {
  std::string name;  // "7b", "70b" or "gpt"
  std::uint64_t psi = 0;
  std::uint64_t hidden = 0, layers = 0, heads = 0, seq = 0, vocab = 0;  // h, L, a, s, V
  std::uint64_t experts = 0;                                            // E (0: dense; the search then keeps ep = 1)
  bool preset = false;                          // Ψ is the chapter's round number, not a count of these dims
  std::uint64_t top_k = 2, every = 1, ffn = 0;  // k, MoE in blocks l % every = 0, F (0: 4h); with experts only
  ExpertDims moe() const { return ExpertDims{experts, top_k, every, ffn}; }
  GptDims gpt() const { return GptDims{vocab, seq, hidden, layers, moe()}; }  // the trainer's GPT of these dims
};

struct SearchLayout {
  std::uint64_t dp = 1, tp = 1, pp = 1, cp = 1, ep = 1;
  bool sequence_parallel = false;                    // SP over the tp ranks (C23)
  int zero = 0;                                      // 0 (plain DP), 1, 2, 3
  std::uint64_t micro_batch = 1, micro_batches = 1;  // b, m
  Recompute recompute = Recompute::none;
  AttentionKernel attention = AttentionKernel::naive;
  std::uint64_t gpus() const { return dp * tp * pp * cp * ep; }
  Strategy strategy() const { return strategy_at(zero); }  // optim/strategy.h: dp, zero1, zero2, zero3
  std::string to_string() const;  // "dp 8 tp 8 pp 1 cp 1 ep 1 ZeRO-1 b 1 × m 16 none flash" (SP: "tp 8 SP")
  bool operator==(const SearchLayout& o) const;
};

struct SearchSpace {
  std::uint64_t gpus = 1;            // N
  std::uint64_t global_batch = 1;    // B, sequences per optimizer step
  std::uint64_t ranks_per_node = 8;  // K (GPUs per node; N < K means one node of N)
};

// "" if the trainer would run the layout, else why not. The micro-batch count is not checked (the enumeration
// derives it from b).
std::string search_layout_problem(const SearchModel& m, const SearchSpace& space, const SearchLayout& l);

// Every (dp, tp, pp, cp, ep) with product N (ep = 1 for a dense model), in that nesting order.
std::vector<SearchLayout> axis_factorizations(std::uint64_t gpus, bool experts);

struct Enumeration {
  std::uint64_t enumerated = 0;  // factorizations (× SP on and off where tp > 1) × 4 ZeRO stages × divisors b of B ×
                                 // 3 recomputes × 2 kernels
  std::uint64_t divisibility = 0;     // of those refused by search_layout_problem or b·dp·ep not dividing B
  std::vector<SearchLayout> layouts;  // the rest, m = B/(dp·ep·b)
};
Enumeration enumerate_layouts(const SearchModel& m, const SearchSpace& space);

// The largest pipeline stage: its blocks (1F1B's balanced split, parallel/pipeline_partition.h).
std::uint64_t largest_stage_blocks(const SearchModel& m, std::uint64_t pp);

struct SearchMemory {
  std::uint64_t psi_slice = 0;             // parameters the GPU holds a share of (its tp slice of its stage)
  int stage = 0;                           // the stage priced: the one holding the most (the first of equals)
  std::uint64_t psi_experts = 0;           // of those, its experts' (E/ep per MoE block of its stage)
  std::uint64_t model_states = 0;          // bytes
  std::uint64_t activation_per_layer = 0;  // bytes per layer per micro-batch (the largest block's: a MoE one's)
  std::uint64_t in_flight = 1;             // micro-batches whose activations stage 0 holds at once
  std::uint64_t activations = 0;           // Σ of the stage's blocks × in_flight
  std::uint64_t total() const { return model_states + activations; }
};
SearchMemory search_memory(const SearchModel& m, const SearchLayout& l);

}  // namespace shardlab::plan
