// The exact mode's linear layer (--exact; linear.h is the normal one): every product cut into blocks whose shapes no
// layout changes — a sample's rows × a chunk of output features × a chunk of input features — and every sum that
// crosses chunks kept order-free (core/exact_sum.h). The chunk widths come from the model, not from the layout (a
// head's q, k and v for QKV — the layout keeps them together — a head's width for W^O, 4C/heads for the MLP,
// V/heads for the LM head), so tensor parallelism only decides
// which chunks a rank holds: a BLAS kernel may round an element differently when the call around it has other rows,
// columns or depth, but the same block always gives the same bits.
//   column-parallel layers (QKV, fc, LM head) split their outputs:  chunks.out = width, chunks.in = 0
//     forward: each output chunk its own product, written as it is; backward: d_in = Σ over output chunks — order-free
//   row-parallel layers (W^O, fc-proj) split their inputs:          chunks.out = 0, chunks.in = width
//     forward: out = Σ over input chunks — order-free; backward: each input chunk of d_in its own product
// The order-free sums are this rank's part: the layout merges them over the ranks that hold the other chunks and
// rounds once (the hooks' *_exact seams).
#pragma once
#include <algorithm>

#include "core/exact_sum.h"
#include "model/linear.h"

namespace shardlab {

struct Chunks {
  int out = 0, in = 0;  // chunk widths of the output and input features (0: one chunk)
};

// Column-parallel (chunks.in = 0): out (N, OC) = in · wᵀ + b, an output chunk at a time.
// Row-parallel (chunks.in > 0): sums (N, OC) = Σ over input chunks of in[:, i] · w[:, i]ᵀ (no bias: it is added
// after the merge); scratch: (IC / chunks.in) × (N / groups, OC) — a sample's chunk products, added in one pass.
template <class T>
void linear_forward_exact(T* out, ExactSum* sums, T* scratch, const T* in, const T* w, const T* b, int N, int IC,
                          int OC, RowSplit split, Chunks chunks) {
  const int n = N / split.groups, wo = chunks.out ? chunks.out : OC, wi = chunks.in ? chunks.in : IC;
  for (int g = 0; g < split.groups; ++g) {
    const T* x = in + size_t(g) * n * IC;
    if (!chunks.in) {
      for (int o = 0; o < OC; o += wo)
        gemm(false, true, n, wo, IC, T(1), x, IC, w + size_t(o) * IC, IC, T(0), out + size_t(g) * n * OC + o, OC);
      continue;
    }
    const size_t block = size_t(n) * OC;
    for (int i = 0; i < IC; i += wi)
      gemm(false, true, n, OC, wi, T(1), x + i, IC, w + i, IC, T(0), scratch + (i / wi) * block, OC);
    exact_add_rows(sums + size_t(g) * block, scratch, block, IC / wi, block);
  }
  if (b && !chunks.in) MatMap<T>(out, N, OC).rowwise() += ConstVecMap<T>(b, OC);
}

// d_w (OC, IC) += d_outᵀ · in, an (output chunk, input chunk) block at a time; d_b (OC) += Σ_rows d_out.
// Column-parallel: d_in_sums (N, IC) = Σ over output chunks of d_out[:, o] · w[o, :] (scratch: (OC / chunks.out) ×
// (N / groups, IC)).
// Row-parallel: d_in (N, IC) = d_out · w, an input chunk at a time. d_in, d_in_sums, d_b may be null.
template <class T>
void linear_backward_exact(T* d_in, ExactSum* d_in_sums, T* scratch, T* d_w, T* d_b, const T* d_out, const T* in,
                           const T* w, int N, int IC, int OC, RowSplit split, Chunks chunks) {
  const int n = N / split.groups, wo = chunks.out ? chunks.out : OC, wi = chunks.in ? chunks.in : IC;
  for (int g = 0; g < split.groups; ++g) {
    const T* dy = d_out + size_t(g) * n * OC;
    const T* x = in + size_t(g) * n * IC;
    if (d_in_sums) {
      const size_t block = size_t(n) * IC;
      for (int o = 0; o < OC; o += wo)
        gemm(false, false, n, IC, wo, T(1), dy + o, OC, w + size_t(o) * IC, IC, T(0), scratch + (o / wo) * block, IC);
      exact_add_rows(d_in_sums + size_t(g) * block, scratch, block, OC / wo, block);
    } else if (d_in) {
      for (int i = 0; i < IC; i += wi)
        gemm(false, false, n, wi, OC, T(1), dy, OC, w + i, IC, T(0), d_in + size_t(g) * n * IC + i, IC);
    }
    T* dw = split.grad_of(d_w, g);
    for (int o = 0; o < OC; o += wo)
      for (int i = 0; i < IC; i += wi)
        gemm(true, false, wo, wi, n, T(1), dy + o, OC, x + i, IC, T(1), dw + size_t(o) * IC + i, IC);
    if (d_b) {  // row by row: each column's sum in row order, whatever OC is (Eigen's colwise sum is not)
      T* db = split.grad_of(d_b, g);
      for (int r = 0; r < n; ++r)
        for (int c = 0; c < OC; ++c) db[c] += dy[size_t(r) * OC + c];
    }
  }
}

// A bias whole on every tp rank (W^O's, fc-proj's): each row's gradient into its order-free sums as it is (every row
// in one pass over the sums), so a rank that holds only some of a sample's rows (sequence parallelism) adds the same
// terms.
template <class T>
void bias_backward_exact(ExactSum* sums, const T* d_out, int rows, int C) {
  exact_add_rows(sums, d_out, size_t(C), rows, size_t(C));
}

}  // namespace shardlab
