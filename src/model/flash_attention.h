// Flash-style causal attention (claim C5) as a forward/backward pair: the same result as attention.h,
// computed block by block so that no (T, T) matrix is ever kept. Per (sample, head) and block of query
// rows, the keys are visited in blocks with an online softmax — a running row maximum m and sum l, the
// partial output rescaled whenever m grows:
//   S = Q·Kᵀ/√HD;  m' = max(m, rowmax S);  P = exp(S - m');  l = l·e^(m-m') + rowsum P;
//   O = O·e^(m-m') + dropout(P)·V;   at the end O /= l and lse = m + log l.
// Forward keeps only O (the attention output, which the projection needs anyway) and lse (B, NH, T);
// backward recomputes every block of P = exp(S - lse) from Q and K and uses D = rowsum(dO ∘ O):
//   dV += dropout(P)ᵀ·dO;  dP = dropout(dO·Vᵀ);  dS = P ∘ (dP - D);  dQ += dS·K/√HD;  dK += dSᵀ·Q/√HD.
// Dropout masks come from the same global counters as the naive kernel (dropout.h), so both draw the
// same mask; results agree to rounding (the sums run in another order).
// Leaves out: the GPU's shared-memory tiling (blocks here are sized for the CPU's caches and BLAS).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include <Eigen/Core>

#include "core/bf16.h"
#include "core/gemm.h"
#include "model/attention.h"
#include "model/dropout.h"
#include "model/flash_blocks.h"
#include "model/flash_merge.h"

namespace shardlab {

// out (B, T, C), lse (B, NH, T), qkv (B, T, 3C); scratch: flash_scratch_elements().
template <class T>
void flash_attention_forward(T* out, T* lse, const T* qkv, AttentionDims d, const Dropout& drop, T* scratch) {
  using Arr = Eigen::Array<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using Tile = Eigen::Map<Arr, 0, Eigen::OuterStride<>>;
  const int Tn = d.T, C = d.C, HD = d.HD(), C3 = 3 * C;
  const T scale = T(1) / std::sqrt(T(HD));
  T* S = scratch;                                                  // (Br, Bc)
  T* m = scratch + size_t(kFlashQueryBlock) * kFlashKeyBlock * 2;  // (Br) running max
  T* l = m + kFlashQueryBlock;                                     // (Br) running sum
  for (int b = 0; b < d.B; ++b)
    for (int h = 0; h < d.NH; ++h) {
      const T* q = qkv + static_cast<size_t>(b) * Tn * C3 + h * 3 * HD;
      const T* k = q + HD;
      const T* v = q + 2 * HD;
      T* o = out + static_cast<size_t>(b) * Tn * C + h * HD;
      T* L = lse + (static_cast<size_t>(b) * d.NH + h) * Tn;
      for (int r0 = 0; r0 < Tn; r0 += kFlashQueryBlock) {
        const int r1 = std::min(Tn, r0 + kFlashQueryBlock), rows = r1 - r0;
        Tile O(o + size_t(r0) * C, rows, HD, Eigen::OuterStride<>(C));
        O.setZero();
        std::fill(m, m + rows, -std::numeric_limits<T>::infinity());
        std::fill(l, l + rows, T(0));
        for (int c0 = 0; c0 < r1; c0 += kFlashKeyBlock) {  // keys up to the diagonal only (causal)
          const int c1 = std::min(r1, c0 + kFlashKeyBlock), cols = c1 - c0;
          gemm(false, true, rows, cols, HD, scale, q + size_t(r0) * C3, C3, k + size_t(c0) * C3, C3, T(0), S, cols);
          online_softmax_merge(S, rows, cols, r0 - c0, m, l, o + size_t(r0) * C, C, HD);
          if (drop.active())
            for (int i = 0; i < rows; ++i)
              drop.apply(S + size_t(i) * cols, S + size_t(i) * cols, static_cast<size_t>(cols),
                         drop.attention_index(b, h, size_t(r0 + i) * Tn + c0));
          gemm(false, false, rows, HD, cols, T(1), S, cols, v + size_t(c0) * C3, C3, T(1), o + size_t(r0) * C, C);
        }
        for (int i = 0; i < rows; ++i) {
          O.row(i) *= T(1) / l[i];
          L[r0 + i] = m[i] + std::log(l[i]);
        }
      }
    }
}

// d_qkv (B, T, 3C) overwritten with the gradients of q, k, v; out and lse as the forward left them.
template <class T>
void flash_attention_backward(T* d_qkv, const T* d_out, const T* out, const T* qkv, const T* lse, AttentionDims d,
                              const Dropout& drop, T* scratch) {
  using ConstRow = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
  using Row = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
  const int Tn = d.T, C = d.C, HD = d.HD(), C3 = 3 * C;
  const T scale = T(1) / std::sqrt(T(HD));
  T* P = scratch;                                               // (Br, Bc): P, then dropout(P)
  T* dP = scratch + size_t(kFlashQueryBlock) * kFlashKeyBlock;  // (Br, Bc)
  T* D = dP + size_t(kFlashQueryBlock) * kFlashKeyBlock;        // (Br) rowsum(dO ∘ O)
  std::memset(static_cast<void*>(d_qkv), 0, sizeof(T) * static_cast<size_t>(d.B) * Tn * C3);
  for (int b = 0; b < d.B; ++b)
    for (int h = 0; h < d.NH; ++h) {
      const size_t qoff = static_cast<size_t>(b) * Tn * C3 + h * 3 * HD;
      const T *q = qkv + qoff, *k = q + HD, *v = q + 2 * HD;
      T *dq = d_qkv + qoff, *dk = dq + HD, *dv = dq + 2 * HD;
      const size_t ooff = static_cast<size_t>(b) * Tn * C + h * HD;
      const T *o = out + ooff, *dO = d_out + ooff;
      const T* L = lse + (static_cast<size_t>(b) * d.NH + h) * Tn;
      for (int r0 = 0; r0 < Tn; r0 += kFlashQueryBlock) {
        const int r1 = std::min(Tn, r0 + kFlashQueryBlock), rows = r1 - r0;
        for (int i = 0; i < rows; ++i)
          D[i] = (ConstRow(dO + size_t(r0 + i) * C, HD) * ConstRow(o + size_t(r0 + i) * C, HD)).sum();
        for (int c0 = 0; c0 < r1; c0 += kFlashKeyBlock) {
          const int c1 = std::min(r1, c0 + kFlashKeyBlock), cols = c1 - c0;
          gemm(false, true, rows, cols, HD, scale, q + size_t(r0) * C3, C3, k + size_t(c0) * C3, C3, T(0), P, cols);
          gemm(false, true, rows, cols, HD, T(1), dO + size_t(r0) * C, C, v + size_t(c0) * C3, C3, T(0), dP, cols);
          for (int i = 0; i < rows; ++i) {
            T *p = P + size_t(i) * cols, *g = dP + size_t(i) * cols;
            const int valid = std::min(cols, r0 + i + 1 - c0);
            Row pr(p, valid), gr(g, valid);
            pr = (pr - L[r0 + i]).exp();
            std::fill(p + valid, p + cols, T(0));
            if (drop.active()) {  // dP = dropout(dO·Vᵀ); p keeps P for dS, the dropped P goes to dV below
              const uint64_t first = drop.attention_index(b, h, size_t(r0 + i) * Tn + c0);
              drop.apply(g, g, static_cast<size_t>(valid), first);
            }
            gr = pr * (gr - D[i]);  // dS
            std::fill(g + valid, g + cols, T(0));
            if (drop.active())
              drop.apply(p, p, static_cast<size_t>(valid), drop.attention_index(b, h, size_t(r0 + i) * Tn + c0));
          }
          gemm(true, false, cols, HD, rows, T(1), P, cols, dO + size_t(r0) * C, C, T(1), dv + size_t(c0) * C3, C3);
          gemm(false, false, rows, HD, cols, scale, dP, cols, k + size_t(c0) * C3, C3, T(1), dq + size_t(r0) * C3, C3);
          gemm(true, false, cols, HD, rows, scale, dP, cols, q + size_t(r0) * C3, C3, T(1), dk + size_t(c0) * C3, C3);
        }
      }
    }
}

}  // namespace shardlab
