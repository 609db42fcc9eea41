// How a product's rows split into separate GEMMs. Normally one GEMM takes all N rows of a micro-batch (fast). The
// exact mode (--exact) runs one GEMM per sample instead, so a sample's arithmetic never depends on which other
// samples share its micro-batch — a BLAS kernel may round a row differently when the call has other rows beside it,
// and a weight gradient summed over N rows adds the samples in an order that depends on the split — and writes each
// sample's parameter gradients to its own copy of the unit's gradients (grad_stride elements apart), which the
// layout then adds order-free (core/exact_sum.h).
#pragma once
#include <cstddef>

namespace shardlab {

struct RowSplit {
  int groups = 1;          // equal runs of rows, each its own product (1: one GEMM for all rows)
  size_t grad_stride = 0;  // group g's parameter gradients at grad + g·grad_stride (0: every group into one)
  bool exact = false;      // the exact mode: one group per sample (also when a micro-batch has one), losses order-free
  int first_group = 0;     // whose gradients group 0 is (a cp rank running some of a micro-batch's samples whole)
  // The group of row n of N, and where its gradients go.
  int group_of(size_t n, size_t N) const { return groups == 1 ? 0 : static_cast<int>(n / (N / groups)); }
  template <class P>
  P grad_of(P grad, int group) const {
    return grad ? grad + size_t(first_group + group) * grad_stride : grad;
  }
};

}  // namespace shardlab
