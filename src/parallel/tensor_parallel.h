// Megatron's tensor-parallel seams (claims C17, C23), the communication a block does at the borders of its
// two tensor-parallel regions (attention: QKV → heads → W^O; MLP: fc → GELU → fc-proj). Inside a region a
// rank computes with its slice of the weights (model/param_layout.h) and needs no communication:
//   column-parallel  Y_i = X·A_iᵀ           (A split by output rows: qkv, fc)
//   row-parallel     Z = Σ_i Y_i·B_iᵀ       (B split by input columns: W^O, fc-proj) — the sum is the all-reduce
// The conjugate pair that makes it so, as named pieces (parallel/megatron_fg.h, a seam; bypassed when t = 1):
//   f = copy_to_tp_region      forward: identity            backward: all-reduce of dX over tp
//   g = reduce_from_tp_region  forward: all-reduce of Z     backward: identity
// so 4 all-reduces of a (b, s, h) tensor per layer per micro-batch, 2 forward + 2 backward (C17).
// With sequence parallelism the residual stream between the regions holds only this rank's positions
// [r·s/t, (r+1)·s/t) of every sample, and the pair becomes (C23):
//   gather_from_sequence_region     forward: all-gather along s      backward: reduce-scatter along s
//   scatter_to_sequence_region      forward: reduce-scatter along s  backward: all-gather along s
// — each all-gather + reduce-scatter moves exactly what one all-reduce moves. On top, backward re-gathers
// each region's input for the weight gradients (purpose "regather" in the comm ledger), because only the
// sequence shard of it is kept: the price of dividing those activations by t, which Megatron pays too.
// The LM head is vocabulary-parallel (each rank its V/t rows of lm_head): f before it (its backward the
// all-reduce of the (b, s, h) input gradient; with SP the all-gather along s instead, and again in backward
// for the weight gradient), and Megatron's parallel cross-entropy's three all-reduces of b·s values — the
// row maxima (MAX), the Σ exp and the target logits (SUM) — all under purpose "vocab".
// Activations are (B, T, C): a sequence shard is B pieces, packed into rank-major order around each
// collective (block.h says why).
#pragma once
#include "comm/communicator.h"
#include "core/ledger.h"
#include "model/model_chunk.h"
#include "parallel/megatron_fg.h"

namespace shardlab {

// The chunk's hooks for tensor parallelism (the blocks' regions and the vocabulary-parallel head), with or without
// sequence parallelism. One per rank, shared by the blocks of all its chunks (only one collective uses the packing
// scratch at a time); the scratch (B·T·C at the micro-batch capacity) is booked as workspace.
template <class T>
class TensorParallelRegions : public ChunkHooks<T> {
 public:
  TensorParallelRegions(Communicator& tp, bool sequence_parallel, size_t capacity_rows, int C, MemoryLedger& ledger);
  const T* enter(const T* x, T* full, const BlockDims& d) override;
  void leave(T* partial, T* y, const BlockDims& d) override;
  const T* leave_backward(const T* dy, T* full, const BlockDims& d) override;
  T* enter_backward(T* d_full, const BlockDims& d) override;
  const T* region_input(const T* x, T* full, const BlockDims& d) override;
  const T* head_input(const T* x, T* full, const BlockDims& d) override;
  void head_input_backward(T* d_full, const BlockDims& d) override;
  void vocab_max(T* x, size_t n) override;
  void vocab_sum(T* x, size_t n) override;
  // The exact mode (model/linear_exact.h): the same sums as order-free ExactSums (32 bytes an element), all-reduced
  // over tp — with SP reduce-scattered along s, packed as the normal mode packs them — and rounded once.
  void leave_exact(ExactSum* partial, T* y, const BlockDims& d) override;
  T* enter_backward_exact(ExactSum* d_partial, T* d_full, const BlockDims& d) override;
  void head_input_backward_exact(ExactSum* d_partial, T* d_full, const BlockDims& d) override;
  void vocab_sum_exact(ExactSum* x, size_t n) override;

 private:
  // The exact mode's sums (N rows) merged into this rank's part (all of them; SP: its R rows, at the front).
  void merge_exact(ExactSum* sums, const BlockDims& d);
  Communicator& tp_;
  bool sp_;
  Buffer<T> packed_;
  MemoryLedger& ledger_;
};

}  // namespace shardlab
