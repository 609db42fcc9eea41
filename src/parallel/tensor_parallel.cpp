// Megatron's tensor-parallel seams: the f/g pair and its sequence-parallel form (see tensor_parallel.h).
#include "parallel/tensor_parallel.h"

#include <cstring>
#include <vector>

namespace shardlab {

namespace {

// (B, T, C) with T = t·T_local, as t rank-major blocks of (B, T_local, C): block r holds positions
// [r·T_local, (r+1)·T_local) of every sample — the order in which each rank's shard is contiguous.
template <class T>
void pack_by_rank(const T* full, T* packed, int B, int T_local, int C, int t) {
  const size_t piece = size_t(T_local) * C;
  for (int r = 0; r < t; ++r)
    for (int b = 0; b < B; ++b)
      std::memcpy(packed + (size_t(r) * B + b) * piece, full + (size_t(b) * t + r) * piece, piece * sizeof(T));
}

template <class T>
void unpack_by_rank(const T* packed, T* full, int B, int T_local, int C, int t) {
  const size_t piece = size_t(T_local) * C;
  for (int r = 0; r < t; ++r)
    for (int b = 0; b < B; ++b)
      std::memcpy(full + (size_t(b) * t + r) * piece, packed + (size_t(r) * B + b) * piece, piece * sizeof(T));
}

}  // namespace

// ---- The collectives underneath.

template <class T>
void tp_all_reduce(Communicator& tp, T* x, size_t n) {
  if (tp.size() > 1) tp.all_reduce(x, n);
}

template <class T>
void sequence_all_gather(Communicator& tp, const T* local, T* full, T* packed, int B, int T_local, int C) {
  const int t = tp.size();
  const size_t shard = size_t(B) * T_local * C;
  if (t == 1) {
    if (full != local) std::memcpy(full, local, shard * sizeof(T));
    return;
  }
  std::memcpy(packed + size_t(tp.rank()) * shard, local, shard * sizeof(T));
  tp.all_gather(packed, std::vector<size_t>(t, shard));
  unpack_by_rank(packed, full, B, T_local, C, t);
}

template <class T>
void sequence_reduce_scatter(Communicator& tp, const T* full, T* local, T* packed, int B, int T_local, int C) {
  const int t = tp.size();
  const size_t shard = size_t(B) * T_local * C;
  if (t == 1) {
    if (full != local) std::memcpy(local, full, shard * sizeof(T));
    return;
  }
  pack_by_rank(full, packed, B, T_local, C, t);
  tp.reduce_scatter(packed, std::vector<size_t>(t, shard));
  std::memcpy(local, packed + size_t(tp.rank()) * shard, shard * sizeof(T));
}

// ---- The conjugate pairs.

template <class T>
void copy_to_tp_region_backward(Communicator& tp, T* dx, size_t n) {
  tp_all_reduce(tp, dx, n);
}

template <class T>
void reduce_from_tp_region(Communicator& tp, T* z, size_t n) {
  tp_all_reduce(tp, z, n);
}

template <class T>
void gather_from_sequence_region(Communicator& tp, const T* x_local, T* x_full, T* packed, int B, int T_local, int C) {
  sequence_all_gather(tp, x_local, x_full, packed, B, T_local, C);
}
template <class T>
void gather_from_sequence_region_backward(Communicator& tp, const T* dx_full, T* dx_local, T* packed, int B,
                                          int T_local, int C) {
  sequence_reduce_scatter(tp, dx_full, dx_local, packed, B, T_local, C);
}

template <class T>
void scatter_to_sequence_region(Communicator& tp, const T* z_full, T* z_local, T* packed, int B, int T_local, int C) {
  sequence_reduce_scatter(tp, z_full, z_local, packed, B, T_local, C);
}
template <class T>
void scatter_to_sequence_region_backward(Communicator& tp, const T* dz_local, T* dz_full, T* packed, int B, int T_local,
                                         int C) {
  sequence_all_gather(tp, dz_local, dz_full, packed, B, T_local, C);
}

// ---- The block's hooks: which piece runs at which seam.

template <class T>
TensorParallelRegions<T>::TensorParallelRegions(Communicator& tp, bool sequence_parallel, size_t capacity_rows, int C,
                                                MemoryLedger& ledger)
    : tp_(tp), sp_(sequence_parallel) {
  if (sp_) packed_ = Buffer<T>(ledger, Mem::workspace, capacity_rows * C);
}

// Entering a region (before QKV, before fc): f, or with SP the all-gather along s.
template <class T>
const T* TensorParallelRegions<T>::enter(const T* x, T* full, const BlockDims& d) {
  if (!sp_) return copy_to_tp_region(x);
  gather_from_sequence_region(tp_, x, full, packed_.data(), d.B, d.T_local, d.C);
  return full;
}

// Leaving a region (after W^O, after fc-proj): g, or with SP the reduce-scatter along s.
template <class T>
void TensorParallelRegions<T>::leave(T* partial, T* y, const BlockDims& d) {
  if (!sp_) {
    if (y != partial) std::memcpy(y, partial, d.rows() * d.C * sizeof(T));
    reduce_from_tp_region(tp_, y, d.rows() * d.C);
    return;
  }
  scatter_to_sequence_region(tp_, partial, y, packed_.data(), d.B, d.T_local, d.C);
}

template <class T>
const T* TensorParallelRegions<T>::leave_backward(const T* dy, T* full, const BlockDims& d) {
  if (!sp_) return reduce_from_tp_region_backward(dy);
  scatter_to_sequence_region_backward(tp_, dy, full, packed_.data(), d.B, d.T_local, d.C);
  return full;
}

template <class T>
T* TensorParallelRegions<T>::enter_backward(T* d_full, const BlockDims& d) {
  if (!sp_) {
    copy_to_tp_region_backward(tp_, d_full, d.region_rows() * d.C);
    return d_full;
  }
  gather_from_sequence_region_backward(tp_, d_full, d_full, packed_.data(), d.B, d.T_local, d.C);
  return d_full;
}

// Backward needs the whole region input for the weight gradients; with SP only the shard was kept.
template <class T>
const T* TensorParallelRegions<T>::region_input(const T* x, T* full, const BlockDims& d) {
  if (!sp_) return x;
  Communicator::Purpose purpose(tp_, "regather");
  gather_from_sequence_region(tp_, x, full, packed_.data(), d.B, d.T_local, d.C);
  return full;
}

// ---- The vocabulary-parallel head's seams (purpose "vocab").

template <class T>
const T* TensorParallelRegions<T>::head_input(const T* x, T* full, const BlockDims& d) {
  if (!sp_) return copy_to_tp_region(x);
  Communicator::Purpose purpose(tp_, "vocab");
  gather_from_sequence_region(tp_, x, full, packed_.data(), d.B, d.T_local, d.C);
  return full;
}

template <class T>
void TensorParallelRegions<T>::head_input_backward(T* d_full, const BlockDims& d) {
  Communicator::Purpose purpose(tp_, "vocab");
  if (!sp_) return copy_to_tp_region_backward(tp_, d_full, d.rows() * d.C);
  gather_from_sequence_region_backward(tp_, d_full, d_full, packed_.data(), d.B, d.T_local, d.C);
}

template <class T>
void TensorParallelRegions<T>::vocab_max(T* x, size_t n) {
  Communicator::Purpose purpose(tp_, "vocab");
  if (tp_.size() > 1) tp_.all_reduce_max(x, n);
}

template <class T>
void TensorParallelRegions<T>::vocab_sum(T* x, size_t n) {
  Communicator::Purpose purpose(tp_, "vocab");
  tp_all_reduce(tp_, x, n);
}

#define SHARDLAB_TP(T)                                                                                   \
  template void tp_all_reduce<T>(Communicator&, T*, size_t);                                             \
  template void sequence_all_gather<T>(Communicator&, const T*, T*, T*, int, int, int);                  \
  template void sequence_reduce_scatter<T>(Communicator&, const T*, T*, T*, int, int, int);              \
  template void copy_to_tp_region_backward<T>(Communicator&, T*, size_t);                                \
  template void reduce_from_tp_region<T>(Communicator&, T*, size_t);                                     \
  template void gather_from_sequence_region<T>(Communicator&, const T*, T*, T*, int, int, int);          \
  template void gather_from_sequence_region_backward<T>(Communicator&, const T*, T*, T*, int, int, int); \
  template void scatter_to_sequence_region<T>(Communicator&, const T*, T*, T*, int, int, int);           \
  template void scatter_to_sequence_region_backward<T>(Communicator&, const T*, T*, T*, int, int, int);  \
  template class TensorParallelRegions<T>;
SHARDLAB_TP(float)
SHARDLAB_TP(double)
#undef SHARDLAB_TP

}  // namespace shardlab
