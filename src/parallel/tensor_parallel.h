// Megatron's tensor-parallel seams (claims C17, C23), the communication a block does at the borders of its
// two tensor-parallel regions (attention: QKV → heads → W^O; MLP: fc → GELU → fc-proj). Inside a region a
// rank computes with its slice of the weights (model/param_layout.h) and needs no communication:
//   column-parallel  Y_i = X·A_iᵀ           (A split by output rows: qkv, fc)
//   row-parallel     Z = Σ_i Y_i·B_iᵀ       (B split by input columns: W^O, fc-proj) — the sum is the all-reduce
// The conjugate pair that makes it so, as named pieces (bypassed when t = 1):
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
// Activations are (B, T, C): a sequence shard is B pieces, packed into rank-major order around each
// collective (block.h says why).
#pragma once
#include "comm/communicator.h"
#include "core/ledger.h"
#include "model/block.h"

namespace shardlab {

// f's backward and g's forward: the all-reduce over tp (in place, n elements).
template <class T>
void tp_all_reduce(Communicator& tp, T* x, size_t n);
// The sequence shards (B, T/t, C) of every tp rank into the whole sequence (B, T, C); packed: B·T·C scratch.
template <class T>
void sequence_all_gather(Communicator& tp, const T* local, T* full, T* packed, int B, int T_local, int C);
// Every rank's partial sums (B, T, C) reduced and scattered: this rank's positions (B, T/t, C) into local.
// full is used as it stands and left unspecified; packed: B·T·C scratch.
template <class T>
void sequence_reduce_scatter(Communicator& tp, const T* full, T* local, T* packed, int B, int T_local, int C);

// The block's RegionHooks for tensor parallelism, with or without sequence parallelism. One per chunk,
// shared by its blocks; the packing scratch (B·T·C at the chunk's capacity) is booked as workspace.
template <class T>
class TensorParallelRegions : public RegionHooks<T> {
 public:
  TensorParallelRegions(Communicator& tp, bool sequence_parallel, size_t capacity_rows, int C, MemoryLedger& ledger);
  const T* enter(const T* x, T* full, const BlockDims& d) override;
  void leave(T* partial, T* y, const BlockDims& d) override;
  const T* leave_backward(const T* dy, T* full, const BlockDims& d) override;
  T* enter_backward(T* d_full, const BlockDims& d) override;
  const T* region_input(const T* x, T* full, const BlockDims& d) override;

 private:
  Communicator& tp_;
  bool sp_;
  Buffer<T> packed_;
};

}  // namespace shardlab
