// Causal multi-head self-attention core as a forward/backward pair (the projections around it
// are linear layers). Per (batch b, head h), with Q, K, V (T, HD) read in place from qkv:
//   S = Q·Kᵀ / sqrt(HD);  P = causal_softmax(S);  Pd = dropout(P);  O = Pd·V
// qkv rows are (B, T, 3C) with per-head blocks [q_h | k_h | v_h] of HD each (see param_layout.h).
// Forward keeps P (B, NH, T, T): the s² activation term of claim C4 (selective recompute drops it and
// re-runs attention_probs in backward; flash attention, flash_attention.h, never forms it). Dropout masks
// are not stored; they are regenerated from the counter-based RNG in backward. With tensor parallelism
// C is this rank's attention width (its NH heads × HD) and qkv holds only its heads.
// Causality is used, not just masked: rows are processed in blocks of kRowBlock, and a block of
// rows [r0, r1) only multiplies against keys [0, r1) — about half the GEMM work of the full square.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include <Eigen/Core>

#include "core/bf16.h"
#include "core/gemm.h"
#include "model/dropout.h"

namespace shardlab {

struct AttentionDims {
  // C: the attention width of this rank's heads, NH × head size (the hidden size only without tensor
  // parallelism; block.cpp passes BlockDims::CL()).
  int B, T, C, NH;
  int HD() const { return C / NH; }
};

constexpr int kRowBlock = 64;

// P (T, T) of one (sample, head) = causal_softmax(Q·Kᵀ/√HD), zero above the diagonal; q, k: that head's
// columns of qkv (row stride 3C). With bf16_probs each probability is rounded to bf16 as it is produced
// (saved activations stored as bf16, --mixed bf16), so forward and backward see the same tensor.
template <class T>
void attention_head_probs(T* P, const T* q, const T* k, int Tn, int HD, int C3, bool bf16_probs) {
  using Row = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
  const T scale = T(1) / std::sqrt(T(HD));
  for (int r0 = 0; r0 < Tn; r0 += kRowBlock) {  // S[r0:r1, 0:r1] = Q[r0:r1]·K[0:r1]ᵀ·scale
    const int r1 = std::min(Tn, r0 + kRowBlock);
    gemm(false, true, r1 - r0, r1, HD, scale, q + static_cast<size_t>(r0) * C3, C3, k, C3, T(0),
         P + static_cast<size_t>(r0) * Tn, Tn);
  }
  for (int i = 0; i < Tn; ++i) {  // causal softmax: row i sees keys 0…i
    Row row(P + static_cast<size_t>(i) * Tn, i + 1);
    row = (row - row.maxCoeff()).exp();
    row *= T(1) / row.sum();
    if (bf16_probs)
      for (int j = 0; j <= i; ++j) row[j] = T(round_bf16(float(row[j])));
    std::fill(P + static_cast<size_t>(i) * Tn + i + 1, P + static_cast<size_t>(i + 1) * Tn, T(0));
  }
}

// Every (sample, head)'s P into probs (B, NH, T, T): what selective recompute re-runs in backward.
template <class T>
void attention_probs(T* probs, const T* qkv, AttentionDims d, bool bf16_probs = false) {
  const int Tn = d.T, HD = d.HD(), C3 = 3 * d.C;
  for (int b = 0; b < d.B; ++b)
    for (int h = 0; h < d.NH; ++h) {
      const T* q = qkv + static_cast<size_t>(b) * Tn * C3 + h * 3 * HD;
      attention_head_probs(probs + (static_cast<size_t>(b) * d.NH + h) * Tn * Tn, q, q + HD, Tn, HD, C3, bf16_probs);
    }
}

// out (B, T, C); probs (B, NH, T, T) kept for backward (zero above the diagonal); qkv (B, T, 3C).
// drop: dropout on P; scratch (T, T) when drop.active(). Per (sample, head): P, then O = dropout(P)·V
// while P is still in cache.
template <class T>
void attention_forward(T* out, T* probs, const T* qkv, AttentionDims d, const Dropout& drop, T* scratch,
                       bool bf16_probs = false) {
  const int Tn = d.T, C = d.C, HD = d.HD(), C3 = 3 * C;
  for (int b = 0; b < d.B; ++b)
    for (int h = 0; h < d.NH; ++h) {
      const T* q = qkv + static_cast<size_t>(b) * Tn * C3 + h * 3 * HD;
      const T* k = q + HD;
      const T* v = q + 2 * HD;
      T* P = probs + (static_cast<size_t>(b) * d.NH + h) * Tn * Tn;
      attention_head_probs(P, q, k, Tn, HD, C3, bf16_probs);
      const T* Pd = P;
      if (drop.active()) {
        drop.apply(scratch, P, static_cast<size_t>(Tn) * Tn, drop.attention_index(b, h, 0));
        Pd = scratch;
      }
      T* o = out + static_cast<size_t>(b) * Tn * C + h * HD;
      for (int r0 = 0; r0 < Tn; r0 += kRowBlock) {  // O[r0:r1] = Pd[r0:r1, 0:r1]·V[0:r1]
        const int r1 = std::min(Tn, r0 + kRowBlock);
        gemm(false, false, r1 - r0, HD, r1, T(1), Pd + static_cast<size_t>(r0) * Tn, Tn, v, C3, T(0),
             o + static_cast<size_t>(r0) * C, C);
      }
    }
}

// d_qkv (B, T, 3C) = gradients of q, k, v (overwritten).  scratch: 2·T·T elements.
template <class T>
void attention_backward(T* d_qkv, const T* d_out, const T* qkv, const T* probs, AttentionDims d, const Dropout& drop,
                        T* scratch) {
  using Row = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
  using ConstRow = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
  const int Tn = d.T, C = d.C, HD = d.HD(), C3 = 3 * C;
  const T scale = T(1) / std::sqrt(T(HD));
  T* dP = scratch;                                     // (T, T)
  T* Pd_buf = scratch + static_cast<size_t>(Tn) * Tn;  // (T, T), dropped probs when dropout is on
  std::memset(static_cast<void*>(d_qkv), 0, sizeof(T) * static_cast<size_t>(d.B) * Tn * C3);  // dK, dV accumulate
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
      for (int r0 = 0; r0 < Tn; r0 += kRowBlock) {
        const int r1 = std::min(Tn, r0 + kRowBlock), m = r1 - r0;
        const size_t ro = static_cast<size_t>(r0);
        gemm(false, true, m, r1, HD, T(1), dO + ro * C, C, v, C3, T(0), dP + ro * Tn, Tn);   // dPd = dO·Vᵀ
        gemm(true, false, r1, HD, m, T(1), Pd + ro * Tn, Tn, dO + ro * C, C, T(1), dv, C3);  // dV += Pdᵀ·dO
      }
      if (drop.active()) drop.apply(dP, dP, static_cast<size_t>(Tn) * Tn, drop.attention_index(b, h, 0));
      for (int i = 0; i < Tn; ++i) {  // dS = P ⊙ (dP - Σ_j P·dP) on j ≤ i
        ConstRow p(P + static_cast<size_t>(i) * Tn, i + 1);
        Row g(dP + static_cast<size_t>(i) * Tn, i + 1);
        const T dot = (p * g).sum();
        g = p * (g - dot);
        std::fill(dP + static_cast<size_t>(i) * Tn + i + 1, dP + static_cast<size_t>(i + 1) * Tn, T(0));
      }
      for (int r0 = 0; r0 < Tn; r0 += kRowBlock) {
        const int r1 = std::min(Tn, r0 + kRowBlock), m = r1 - r0;
        const size_t ro = static_cast<size_t>(r0);
        gemm(false, false, m, HD, r1, scale, dP + ro * Tn, Tn, k, C3, T(0), dq + ro * C3, C3);  // dQ = dS·K/√HD
        gemm(true, false, r1, HD, m, scale, dP + ro * Tn, Tn, q + ro * C3, C3, T(1), dk, C3);   // dK += dSᵀ·Q/√HD
      }
    }
}

}  // namespace shardlab
