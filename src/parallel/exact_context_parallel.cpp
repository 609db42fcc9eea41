// The exact mode's context parallelism: whole samples inside the regions (see exact_context_parallel.h).
#include "parallel/exact_context_parallel.h"

#include <cstring>

#include "model/whole_samples.h"

namespace shardlab {

template <class T>
ExactContextParallel<T>::ExactContextParallel(Communicator& cp, ChunkHooks<T>* inner, const ModelSlice& slice, int seq,
                                              int capacity, int hidden, MemoryLedger& ledger)
    : WrappedHooks<T>(inner), cp_(cp), T_(seq), Tc_(slice.T_ctx(seq)), C_(hidden) {
  for (int r = 0; r < cp.size(); ++r) positions_.push_back(TokenPositions::of_rank(seq, cp.size(), r, slice.cp_split));
  // capacity is a multiple of c, so a rank's whole samples (≤ ⌈B/c⌉ of any B ≤ capacity) fit in its token rows.
  const size_t n = size_t(capacity) * Tc_ * C_;
  for (Buffer<T>* b : {&inputs_, &grads_, &rounded_, &exchange_})
    *b = Buffer<T>(ledger, Mem::comm_buffer, n, 0, nullptr, false);
}

template <class T>
const T* ExactContextParallel<T>::gather(const T* x, int B, T* out) {
  const int c = cp_.size(), me = cp_.rank();
  batch_ = B;
  const int first = first_whole_sample(B, c, me), mine = first_whole_sample(B, c, me + 1) - first;
  const size_t rows = size_t(Tc_) * C_;  // one sample's tokens on one rank
  std::vector<size_t> sent(c), got(c, size_t(mine) * rows);
  for (int q = 0; q < c; ++q) sent[q] = size_t(first_whole_sample(B, c, q + 1) - first_whole_sample(B, c, q)) * rows;
  {
    Communicator::Purpose purpose(cp_, "exact_rows");
    cp_.all_to_all_v(x, sent, exchange_.data(), got);  // x holds rank q's samples contiguously: they go to q
  }
  for (int q = 0; q < c; ++q)  // rank q's tokens of sample j: rows at q's positions
    for (int j = 0; j < mine; ++j)
      for (int i = 0; i < Tc_; ++i)
        std::memcpy(out + (size_t(j) * T_ + positions_[q].at(i)) * C_,
                    exchange_.data() + ((size_t(q) * mine + j) * Tc_ + i) * C_, C_ * sizeof(T));
  return out;
}

template <class T>
void ExactContextParallel<T>::scatter(const T* whole, T* y) {
  const int c = cp_.size(), me = cp_.rank(), B = batch_;
  const int first = first_whole_sample(B, c, me), mine = first_whole_sample(B, c, me + 1) - first;
  const size_t rows = size_t(Tc_) * C_;
  for (int q = 0; q < c; ++q)
    for (int j = 0; j < mine; ++j)
      for (int i = 0; i < Tc_; ++i)
        std::memcpy(exchange_.data() + ((size_t(q) * mine + j) * Tc_ + i) * C_,
                    whole + (size_t(j) * T_ + positions_[q].at(i)) * C_, C_ * sizeof(T));
  std::vector<size_t> sent(c, size_t(mine) * rows), got(c);
  for (int q = 0; q < c; ++q) got[q] = size_t(first_whole_sample(B, c, q + 1) - first_whole_sample(B, c, q)) * rows;
  Communicator::Purpose purpose(cp_, "exact_rows");
  cp_.all_to_all_v(exchange_.data(), sent, y, got);  // rank q's samples land where y keeps them
}

template <class T>
const T* ExactContextParallel<T>::enter(const T* x, T* full, const BlockDims& d) {
  return gather(WrappedHooks<T>::enter(x, full, d), d.B, inputs_.data());
}

template <class T>
const T* ExactContextParallel<T>::region_input(const T* x, T* full, const BlockDims& d) {
  return gather(WrappedHooks<T>::region_input(x, full, d), d.B, inputs_.data());
}

template <class T>
const T* ExactContextParallel<T>::leave_backward(const T* dy, T* full, const BlockDims& d) {
  return gather(WrappedHooks<T>::leave_backward(dy, full, d), d.B, grads_.data());
}

template <class T>
const T* ExactContextParallel<T>::head_input(const T* x, T* full, const BlockDims& d) {
  return gather(WrappedHooks<T>::head_input(x, full, d), d.B, inputs_.data());
}

template <class T>
void ExactContextParallel<T>::leave_exact(ExactSum* partial, T* y, const BlockDims& d) {
  WrappedHooks<T>::leave_exact(partial, rounded_.data(), d);
  scatter(rounded_.data(), y);
}

template <class T>
T* ExactContextParallel<T>::enter_backward_exact(ExactSum* d_partial, T* d_full, const BlockDims& d) {
  scatter(WrappedHooks<T>::enter_backward_exact(d_partial, rounded_.data(), d), d_full);
  return d_full;
}

template <class T>
void ExactContextParallel<T>::head_input_backward_exact(ExactSum* d_partial, T* d_full, const BlockDims& d) {
  WrappedHooks<T>::head_input_backward_exact(d_partial, rounded_.data(), d);
  scatter(rounded_.data(), d_full);
}

template class ExactContextParallel<float>;
template class ExactContextParallel<double>;

}  // namespace shardlab
