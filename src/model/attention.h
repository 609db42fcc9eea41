// Causal multi-head self-attention core as a forward/backward pair (the projections around it
// are linear layers). Per (batch b, head h), with Q, K, V (T, HD) read in place from qkv:
//   S = Q·Kᵀ / sqrt(HD);  P = causal_softmax(S);  Pd = dropout(P);  O = Pd·V
// qkv rows are (B, T, 3C) with per-head blocks [q_h | k_h | v_h] of HD each (see param_layout.h).
// Forward keeps P (B, NH, T, T): the s² activation term of claim C4. Dropout masks are not stored;
// they are regenerated from the counter-based RNG in backward.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/gemm.h"
#include "model/dropout.h"

namespace shardlab {

struct AttentionDims {
  int B, T, C, NH;
  int HD() const { return C / NH; }
};

// out (B, T, C); probs (B, NH, T, T) kept for backward; qkv (B, T, 3C).
// drop: dropout on P for global samples first_sample…; scratch (T, T) when drop.active().
template <class T>
void attention_forward(T* out, T* probs, const T* qkv, AttentionDims d, const Dropout& drop, T* scratch) {
  const int Tn = d.T, C = d.C, HD = d.HD(), C3 = 3 * C;
  const T scale = T(1) / std::sqrt(T(HD));
  for (int b = 0; b < d.B; ++b)
    for (int h = 0; h < d.NH; ++h) {
      const T* q = qkv + static_cast<size_t>(b) * Tn * C3 + h * 3 * HD;
      const T* k = q + HD;
      const T* v = q + 2 * HD;
      T* P = probs + (static_cast<size_t>(b) * d.NH + h) * Tn * Tn;
      gemm(false, true, Tn, Tn, HD, scale, q, C3, k, C3, T(0), P, Tn);  // S (T, T)
      for (int i = 0; i < Tn; ++i) {                                    // causal softmax, row i sees 0…i
        T* row = P + static_cast<size_t>(i) * Tn;
        T mx = row[0];
        for (int j = 1; j <= i; ++j) mx = std::max(mx, row[j]);
        T sum = 0;
        for (int j = 0; j <= i; ++j) { row[j] = std::exp(row[j] - mx); sum += row[j]; }
        T inv = T(1) / sum;
        for (int j = 0; j <= i; ++j) row[j] *= inv;
        std::fill(row + i + 1, row + Tn, T(0));
      }
      const T* Pd = P;
      if (drop.active()) {
        drop.apply(scratch, P, static_cast<size_t>(Tn) * Tn, drop.attention_index(b, h, 0));
        Pd = scratch;
      }
      T* o = out + static_cast<size_t>(b) * Tn * C + h * HD;
      gemm(false, false, Tn, HD, Tn, T(1), Pd, Tn, v, C3, T(0), o, C);  // O (T, HD)
    }
}

// d_qkv (B, T, 3C) = gradients of q, k, v (overwritten).  scratch: 2·T·T elements.
template <class T>
void attention_backward(T* d_qkv, const T* d_out, const T* qkv, const T* probs, AttentionDims d, const Dropout& drop,
                        T* scratch) {
  const int Tn = d.T, C = d.C, HD = d.HD(), C3 = 3 * C;
  const T scale = T(1) / std::sqrt(T(HD));
  T* dP = scratch;                                   // (T, T)
  T* Pd_buf = scratch + static_cast<size_t>(Tn) * Tn;  // (T, T), dropped probs when dropout is on
  for (int b = 0; b < d.B; ++b)
    for (int h = 0; h < d.NH; ++h) {
      const size_t qoff = static_cast<size_t>(b) * Tn * C3 + h * 3 * HD;
      const T* q = qkv + qoff;
      const T* k = q + HD;
      const T* v = q + 2 * HD;
      T* dq = d_qkv + qoff;
      T* dk = dq + HD;
      T* dv = dq + 2 * HD;
      const T* P = probs + (static_cast<size_t>(b) * d.NH + h) * Tn * Tn;
      const T* dO = d_out + static_cast<size_t>(b) * Tn * C + h * HD;
      const T* Pd = P;
      if (drop.active()) {
        drop.apply(Pd_buf, P, static_cast<size_t>(Tn) * Tn, drop.attention_index(b, h, 0));
        Pd = Pd_buf;
      }
      gemm(false, true, Tn, Tn, HD, T(1), dO, C, v, C3, T(0), dP, Tn);   // dPd = dO·Vᵀ
      gemm(true, false, Tn, HD, Tn, T(1), Pd, Tn, dO, C, T(0), dv, C3);  // dV = Pdᵀ·dO
      if (drop.active()) drop.apply(dP, dP, static_cast<size_t>(Tn) * Tn, drop.attention_index(b, h, 0));
      for (int i = 0; i < Tn; ++i) {  // dS = P ⊙ (dP - Σ_j P·dP), zero above the diagonal
        const T* p = P + static_cast<size_t>(i) * Tn;
        T* g = dP + static_cast<size_t>(i) * Tn;
        T dot = 0;
        for (int j = 0; j <= i; ++j) dot += p[j] * g[j];
        for (int j = 0; j <= i; ++j) g[j] = p[j] * (g[j] - dot);
        std::fill(g + i + 1, g + Tn, T(0));
      }
      gemm(false, false, Tn, HD, Tn, scale, dP, Tn, k, C3, T(0), dq, C3);  // dQ = dS·K / sqrt(HD)
      gemm(true, false, Tn, HD, Tn, scale, dP, Tn, q, C3, T(0), dk, C3);   // dK = dSᵀ·Q / sqrt(HD)
    }
}

}  // namespace shardlab
