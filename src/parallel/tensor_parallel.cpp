// The block's tensor-parallel hooks: which of Megatron's pieces (megatron_fg.h) runs at which border (see
// tensor_parallel.h).
#include "parallel/tensor_parallel.h"

#include "parallel/tp_collectives.h"

namespace shardlab {

// ---- The block's hooks: which piece runs at which seam.

template <class T>
TensorParallelRegions<T>::TensorParallelRegions(Communicator& tp, bool sequence_parallel, size_t capacity_rows, int C,
                                                MemoryLedger& ledger)
    : tp_(tp), sp_(sequence_parallel), ledger_(ledger) {
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

// ---- The exact mode: the sums merged over tp (any ring order gives the same bits), rounded once.

template <class T>
void TensorParallelRegions<T>::merge_exact(ExactSum* sums, const BlockDims& d) {
  if (!sp_) {
    tp_.all_reduce(sums, d.region_rows() * size_t(d.C));
    return;
  }
  Buffer<ExactSum> packed(ledger_, Mem::workspace, d.region_rows() * size_t(d.C), 0, "exact.packed", false);
  sequence_reduce_scatter(tp_, sums, sums, packed.data(), d.B, d.T_local, d.C);
}

template <class T>
void TensorParallelRegions<T>::leave_exact(ExactSum* partial, T* y, const BlockDims& d) {
  merge_exact(partial, d);
  exact_round(y, partial, d.rows() * size_t(d.C));
}

template <class T>
T* TensorParallelRegions<T>::enter_backward_exact(ExactSum* d_partial, T* d_full, const BlockDims& d) {
  merge_exact(d_partial, d);
  exact_round(d_full, d_partial, (sp_ ? d.rows() : d.region_rows()) * size_t(d.C));
  return d_full;
}

template <class T>
void TensorParallelRegions<T>::head_input_backward_exact(ExactSum* d_partial, T* d_full, const BlockDims& d) {
  Communicator::Purpose purpose(tp_, "vocab");
  enter_backward_exact(d_partial, d_full, d);
}

template <class T>
void TensorParallelRegions<T>::vocab_sum_exact(ExactSum* x, size_t n) {
  Communicator::Purpose purpose(tp_, "vocab");
  tp_.all_reduce(x, n);
}

#define SHARDLAB_TP(T) template class TensorParallelRegions<T>;
SHARDLAB_TP(float)
SHARDLAB_TP(double)
#undef SHARDLAB_TP

}  // namespace shardlab
