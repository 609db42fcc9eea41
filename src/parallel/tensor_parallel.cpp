// Megatron's tensor-parallel seams: the f/g pair and its sequence-parallel form (see tensor_parallel.h).
#include "parallel/tensor_parallel.h"

#include <cstring>
#include <vector>

namespace shardlab {

template <class T>
void tp_all_reduce(Communicator& tp, T* x, size_t n) {
  tp.all_reduce(x, n);
}

// (B, T, C) with T = t·T_local, as t rank-major blocks of (B, T_local, C): block r holds positions
// [r·T_local, (r+1)·T_local) of every sample — the order in which each rank's shard is contiguous.
template <class T>
static void pack_by_rank(const T* full, T* packed, int B, int T_local, int C, int t) {
  const size_t piece = size_t(T_local) * C;
  for (int r = 0; r < t; ++r)
    for (int b = 0; b < B; ++b)
      std::memcpy(packed + (size_t(r) * B + b) * piece, full + (size_t(b) * t + r) * piece, piece * sizeof(T));
}

template <class T>
static void unpack_by_rank(const T* packed, T* full, int B, int T_local, int C, int t) {
  const size_t piece = size_t(T_local) * C;
  for (int r = 0; r < t; ++r)
    for (int b = 0; b < B; ++b)
      std::memcpy(full + (size_t(b) * t + r) * piece, packed + (size_t(r) * B + b) * piece, piece * sizeof(T));
}

template <class T>
void sequence_all_gather(Communicator& tp, const T* local, T* full, T* packed, int B, int T_local, int C) {
  const int t = tp.size();
  const size_t shard = size_t(B) * T_local * C;
  std::memcpy(packed + size_t(tp.rank()) * shard, local, shard * sizeof(T));
  tp.all_gather(packed, std::vector<size_t>(t, shard));
  unpack_by_rank(packed, full, B, T_local, C, t);
}

template <class T>
void sequence_reduce_scatter(Communicator& tp, const T* full, T* local, T* packed, int B, int T_local, int C) {
  const int t = tp.size();
  const size_t shard = size_t(B) * T_local * C;
  pack_by_rank(full, packed, B, T_local, C, t);
  tp.reduce_scatter(packed, std::vector<size_t>(t, shard));
  std::memcpy(local, packed + size_t(tp.rank()) * shard, shard * sizeof(T));
}

template <class T>
TensorParallelRegions<T>::TensorParallelRegions(Communicator& tp, bool sequence_parallel, size_t capacity_rows, int C,
                                                MemoryLedger& ledger)
    : tp_(tp), sp_(sequence_parallel) {
  if (sp_) packed_ = Buffer<T>(ledger, Mem::workspace, capacity_rows * C);
}

// f forward: identity; with SP, the all-gather of the region's input along the sequence.
template <class T>
const T* TensorParallelRegions<T>::enter(const T* x, T* full, const BlockDims& d) {
  if (!sp_) return x;
  sequence_all_gather(tp_, x, full, packed_.data(), d.B, d.T_local, d.C);
  return full;
}

// g forward: the all-reduce of the row-parallel partial sums; with SP, their reduce-scatter along the sequence.
template <class T>
void TensorParallelRegions<T>::leave(T* partial, T* y, const BlockDims& d) {
  if (!sp_) {
    if (y != partial) std::memcpy(y, partial, d.rows() * d.C * sizeof(T));
    tp_all_reduce(tp_, y, d.rows() * d.C);
    return;
  }
  sequence_reduce_scatter(tp_, partial, y, packed_.data(), d.B, d.T_local, d.C);
}

// g backward: identity; with SP, the all-gather of the output gradient.
template <class T>
const T* TensorParallelRegions<T>::leave_backward(const T* dy, T* full, const BlockDims& d) {
  if (!sp_) return dy;
  sequence_all_gather(tp_, dy, full, packed_.data(), d.B, d.T_local, d.C);
  return full;
}

// f backward: the all-reduce of the input gradient's partial sums; with SP, their reduce-scatter.
template <class T>
T* TensorParallelRegions<T>::enter_backward(T* d_full, const BlockDims& d) {
  if (!sp_) {
    tp_all_reduce(tp_, d_full, d.region_rows() * d.C);
    return d_full;
  }
  sequence_reduce_scatter(tp_, d_full, d_full, packed_.data(), d.B, d.T_local, d.C);
  return d_full;
}

// Backward needs the whole region input for the weight gradients; with SP only the shard was kept.
template <class T>
const T* TensorParallelRegions<T>::region_input(const T* x, T* full, const BlockDims& d) {
  if (!sp_) return x;
  Communicator::Purpose purpose(tp_, "regather");
  sequence_all_gather(tp_, x, full, packed_.data(), d.B, d.T_local, d.C);
  return full;
}

#define SHARDLAB_TP(T)                                                                      \
  template void tp_all_reduce<T>(Communicator&, T*, size_t);                                \
  template void sequence_all_gather<T>(Communicator&, const T*, T*, T*, int, int, int);     \
  template void sequence_reduce_scatter<T>(Communicator&, const T*, T*, T*, int, int, int); \
  template class TensorParallelRegions<T>;
SHARDLAB_TP(float)
SHARDLAB_TP(double)
#undef SHARDLAB_TP

}  // namespace shardlab
