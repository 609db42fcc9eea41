// The products at a tensor-parallel region's borders, in the normal mode or the exact one (--exact,
// linear_exact.h), each with its seam: the block and the head call these, not linear.h directly.
//   column_forward         a column-parallel layer's forward (QKV, fc, the LM head): no seam after it
//   row_forward_leave      a row-parallel layer's forward (W^O, fc-proj) and `leave` (g: the sum over ranks)
//   row_backward           its backward: the weight gradient and the input gradient of this rank's slice
//   column_backward_enter  a column-parallel layer's backward and `enter_backward` (f's backward: the sum)
// chunk: the model's chunk width of the split dimension (a head's width, 4C/heads of the MLP, V/heads of the
// vocabulary); the normal mode ignores it. Scratch for the exact sums is booked as workspace ("exact.sums").
#pragma once
#include <algorithm>

#include "core/ledger.h"
#include "model/block.h"
#include "model/linear_exact.h"

namespace shardlab {

namespace exact_detail {
template <class T>
struct Sums {  // order-free sums of (rows, cols) and one group's chunk products
  Buffer<ExactSum> sums;
  Buffer<T> scratch;
  Sums(MemoryLedger& ledger, int rows, int cols, int groups, int chunks)
      : sums(ledger, Mem::workspace, size_t(rows) * cols, 0, "exact.sums", false),
        scratch(ledger, Mem::workspace, size_t(rows / groups) * cols * chunks, 0, "exact.scratch", false) {
    std::fill(sums.data(), sums.data() + size_t(rows) * cols, ExactSum{});
  }
};
}  // namespace exact_detail

template <class T>
void column_forward(T* out, const T* in, const T* w, const T* b, int N, int IC, int OC, const RowSplit& split,
                    int chunk) {
  if (split.exact)
    linear_forward_exact(out, static_cast<ExactSum*>(nullptr), static_cast<T*>(nullptr), in, w, b, N, IC, OC, split,
                         Chunks{chunk, 0});
  else
    linear_forward(out, in, w, b, N, IC, OC, split);
}

// partial: (N, C) scratch for the normal mode's partial sums (may be y when N = R); y: the residual rows.
template <class T>
void row_forward_leave(T* partial, T* y, const T* in, const T* w, int N, int IC, int C, const BlockDims& d, int chunk,
                       RegionHooks<T>& hooks, MemoryLedger& ledger) {
  if (!d.split.exact) {
    linear_forward(partial, in, w, static_cast<const T*>(nullptr), N, IC, C, d.split);
    hooks.leave(partial, y, d);
    return;
  }
  exact_detail::Sums<T> s(ledger, N, C, d.split.groups, IC / chunk);
  linear_forward_exact(static_cast<T*>(nullptr), s.sums.data(), s.scratch.data(), in, w, static_cast<const T*>(nullptr),
                       N, IC, C, d.split, Chunks{0, chunk});
  hooks.leave_exact(s.sums.data(), y, d);
}

template <class T>
void row_backward(T* d_in, T* d_w, T* d_b, const T* d_out, const T* in, const T* w, int N, int IC, int OC,
                  const RowSplit& split, int chunk) {
  if (split.exact)
    linear_backward_exact(d_in, static_cast<ExactSum*>(nullptr), static_cast<T*>(nullptr), d_w, d_b, d_out, in, w, N,
                          IC, OC, split, Chunks{0, chunk});
  else
    linear_backward(d_in, d_w, d_b, d_out, in, w, N, IC, OC, split);
}

// Returns where the summed input gradient is (the hooks decide: in place in d_in, normally).
template <class T>
T* column_backward_enter(T* d_in, T* d_w, T* d_b, const T* d_out, const T* in, const T* w, int N, int IC, int OC,
                         const BlockDims& d, int chunk, RegionHooks<T>& hooks, MemoryLedger& ledger) {
  if (!d.split.exact) {
    linear_backward(d_in, d_w, d_b, d_out, in, w, N, IC, OC, d.split);
    return hooks.enter_backward(d_in, d);
  }
  exact_detail::Sums<T> s(ledger, N, IC, d.split.groups, OC / chunk);
  linear_backward_exact(static_cast<T*>(nullptr), s.sums.data(), s.scratch.data(), d_w, d_b, d_out, in, w, N, IC, OC,
                        d.split, Chunks{chunk, 0});
  return hooks.enter_backward_exact(s.sums.data(), d_in, d);
}

}  // namespace shardlab
