// The head of the model as a forward/backward pair: the final LayerNorm, the LM head (untied, no bias) and
// the softmax cross-entropy over the vocabulary. Under tensor parallelism it is vocabulary-parallel (each tp
// rank its V/t rows of lm_head, Megatron's parallel cross-entropy, claim C17): its communication goes
// through HeadHooks, as a block's goes through RegionHooks (block.h). The head is unit L+1 of the flat
// layout; like a block it keeps what its backward needs in a record (activation_record.h: HeadRecord).
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/exact_sum.h"
#include "core/ledger.h"
#include "model/activation_record.h"
#include "model/block.h"
#include "model/config.h"
#include "model/param_layout.h"
#include "model/unit_access.h"

namespace shardlab {

// The seams of the vocabulary-parallel head. The base class is the identity (one rank holds the whole head).
template <class T>
class HeadHooks {
 public:
  virtual ~HeadHooks() = default;
  // The LM head's input from the final LayerNorm's rows (B·T_local) to the B·T rows every tp rank's
  // vocabulary slice multiplies — f, or with SP an all-gather along s (also in backward, for the weight
  // gradient: only the shard is kept) — and its input gradient back: every rank's part summed in place (SP:
  // reduce-scattered into the first B·T_local rows).
  virtual const T* head_input(const T* x, T* full, const BlockDims& d) { return x; }
  virtual void head_input_backward(T* d_full, const BlockDims& d) {}
  // The parallel cross-entropy's reductions over the vocabulary slices, in place on n values.
  virtual void vocab_max(T* x, size_t n) {}
  virtual void vocab_sum(T* x, size_t n) {}
  // The exact mode: the input gradient's order-free sums over this rank's vocabulary chunks, merged and rounded into
  // d_full (d.region_rows() rows); the Σ exp of every row as order-free sums, merged in place.
  virtual void head_input_backward_exact(ExactSum* d_partial, T* d_full, const BlockDims& d) {
    exact_round(d_full, d_partial, d.region_rows() * size_t(d.C));
  }
  virtual void vocab_sum_exact(ExactSum* x, size_t n) {}
};

// Forward of the head for one micro-batch: h.x holds the last block's output (d.rows() rows); keeps the
// final LayerNorm's output and statistics and the probabilities of this rank's vocabulary columns in h;
// returns Σ −log p[target] over this rank's positions (the loss before its one normalisation); loss_terms (the exact
// mode): each position's −log p added to it too. d.split: the head unit's (row_split.h).
// targets: one per row the head multiplies (this rank's rows; with SP every position of the micro-batch).
template <class T>
double head_forward(HeadRecord<T>& h, const int32_t* targets, UnitAccess<T>& access, const ParamLayout& layout,
                    const GPTConfig& cfg, const ModelSlice& slice, const BlockDims& d, bool bf16, BlockScratch<T>& ws,
                    HeadHooks<T>& hooks, MemoryLedger& ledger, ExactSum* loss_terms = nullptr);

// Backward: the gradients of the head's tensors accumulate into the unit's gradients, and ws.d_res receives
// d(h.x); loss_scale is the one normalisation (1 / tokens of the global batch). The record is released.
template <class T>
void head_backward(HeadRecord<T>& h, const int32_t* targets, T loss_scale, UnitAccess<T>& access,
                   const ParamLayout& layout, const GPTConfig& cfg, const ModelSlice& slice, const BlockDims& d,
                   BlockScratch<T>& ws, HeadHooks<T>& hooks, MemoryLedger& ledger);

}  // namespace shardlab
