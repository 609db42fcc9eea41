// An expert's linear layer backward in the exact mode (--exact, model/moe.h). An expert's rows come from many
// samples, in an order and grouping the layout decides (which ranks sent them, how the micro-batches split), so
// nothing may depend on which rows share a product: every row is its own product, and its weight gradient — a
// rank-1 product dy_rᵀ·x_r, one rounded multiplication per element, no sum — goes straight into the expert's
// order-free sums (core/exact_sum.h), as does its bias gradient dy_r. The layout then adds the sums over the ranks
// that hold the same expert, in any order, to the same bits.
#pragma once
#include <algorithm>

#include "core/exact_sum.h"
#include "core/gemm.h"
#include "core/ledger.h"

namespace shardlab {

// d_in (rows, IC) = d_out · w, a row at a time; sum_w (OC, IC) += each row's d_out_rᵀ·in_r; sum_b (OC) += d_out_r.
template <class T>
void expert_linear_backward_exact(T* d_in, ExactSum* sum_w, ExactSum* sum_b, const T* d_out, const T* in, const T* w,
                                  int rows, int IC, int OC, MemoryLedger& ledger) {
  constexpr int kBlock = 8;  // rows' rank-1 products deposited in one pass over the sums
  const size_t wn = size_t(OC) * IC;
  Buffer<T> products(ledger, Mem::workspace, kBlock * wn, 0, nullptr, false);
  for (int r0 = 0; r0 < rows; r0 += kBlock) {
    const int n = std::min(kBlock, rows - r0);
    for (int j = 0; j < n; ++j) {
      const T* dy = d_out + size_t(r0 + j) * OC;
      const T* x = in + size_t(r0 + j) * IC;
      T* p = products.data() + j * wn;
      for (int o = 0; o < OC; ++o)
        for (int i = 0; i < IC; ++i) p[size_t(o) * IC + i] = dy[o] * x[i];
      gemm(false, false, 1, IC, OC, T(1), dy, OC, w, IC, T(0), d_in + size_t(r0 + j) * IC, IC);
    }
    exact_add_rows(sum_w, products.data(), wn, n, wn);
  }
  exact_add_rows(sum_b, d_out, size_t(OC), rows, size_t(OC));
}

}  // namespace shardlab
