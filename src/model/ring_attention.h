// Ring attention's compute (claim C24): causal attention of this rank's queries against one visiting block of
// keys and values — this rank's own, or another context-parallel rank's — with no communication
// (parallel/context_parallel.cpp moves the blocks around the ring and calls these in turn).
// Queries and keys carry their global positions (token_positions.h); key k is visible to query q iff
// pos(k) ≤ pos(q). Both sides hold runs (chunks) of equal length, so a (query run, key run) pair is whole
// (the key chunk is earlier), diagonal (the same chunk: causal inside) or skipped (later).
//   forward   per (sample, head) and block of ≤ 64 query rows: the flash kernel's online softmax over the
//             visiting block's visible keys gives a partial (mb, lb, Ob) — merged into the running (m, l, O)
//             by ring_merge.h; after the last block, ring_finish: O /= l, lse = m + log l.
//   backward  with the FINAL lse and D = rowsum(dO ∘ O), every visible tile recomputes P = e^(S − lse) and adds
//             its share: dQ += dS·K/√HD (this rank's), dK += dSᵀ·Q/√HD and dV += dropout(P)ᵀ·dO (the block's).
// K and V travel packed: kv (B, Tc, NH, 2, HD), each head's k then v — 2/3 of qkv's bytes.
// Dropout masks are the single process's: counter (sample, head, pos(q)·T + pos(k)) (dropout.h).
// progress (may be null) is called after every block of query rows: the ring's driver moves its messages on
// there, so a transfer advances while this rank computes instead of only when it waits.
// Leaves out: the naive kernel (ring attention is the online softmax's algorithm; train_config.cpp refuses
// --attention naive with --cp).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include <Eigen/Core>

#include "core/gemm.h"
#include "model/dropout.h"
#include "model/flash_blocks.h"
#include "model/flash_merge.h"
#include "model/ring_merge.h"
#include "model/token_positions.h"

namespace shardlab {

struct RingDims {
  int B = 0, NH = 0, HD = 0;  // samples, this rank's heads, head size
  int Tc = 0;                 // tokens per sample on each rank
  int CL() const { return NH * HD; }
};

// Scratch elements of ring_block_forward/backward: two tiles, four rows of statistics and a partial output.
inline size_t ring_scratch_elements(int HD) {
  return 2 * size_t(kFlashQueryBlock) * kFlashKeyBlock + 4 * size_t(kFlashQueryBlock) + size_t(kFlashQueryBlock) * HD;
}

// kv (B, Tc, NH, 2, HD) ← the k and v columns of qkv (B, Tc, NH, 3, HD).
template <class T>
void pack_kv(T* kv, const T* qkv, RingDims d) {
  const size_t rows = size_t(d.B) * d.Tc, HD = d.HD;
  for (size_t r = 0; r < rows; ++r)
    for (int h = 0; h < d.NH; ++h)
      std::memcpy(kv + (r * d.NH + h) * 2 * HD, qkv + (r * d.NH + h) * 3 * HD + HD, 2 * HD * sizeof(T));
}

// The k and v columns of d_qkv ← dkv (B, Tc, NH, 2, HD).
template <class T>
void unpack_dkv(T* d_qkv, const T* dkv, RingDims d) {
  const size_t rows = size_t(d.B) * d.Tc, HD = d.HD;
  for (size_t r = 0; r < rows; ++r)
    for (int h = 0; h < d.NH; ++h)
      std::memcpy(d_qkv + (r * d.NH + h) * 3 * HD + HD, dkv + (r * d.NH + h) * 2 * HD, 2 * HD * sizeof(T));
}

// The key tiles of key run kr that query rows [r0, r1) of query run qr may see, in order: fn(c0, cols, diag)
// with diag = pos(first query row) − pos(first key). In a diagonal pair the tiles stop at the diagonal, so
// every row sees at least the tile's first key (key tiles are multiples of the query blocks, flash_blocks.h).
template <class Fn>
void for_visible_tiles(const TokenPositions& qp, int qr, int r0, int r1, const TokenPositions& kp, int kr, Fn fn) {
  if (kp.chunk[kr] > qp.chunk[qr]) return;  // a later chunk: nothing visible
  const bool diagonal = kp.chunk[kr] == qp.chunk[qr];
  const int end = diagonal ? r1 : kp.run;
  for (int c0 = 0; c0 < end; c0 += kFlashKeyBlock)
    fn(c0, std::min(end, c0 + kFlashKeyBlock) - c0, (qp.first[qr] + r0) - (kp.first[kr] + c0));
}

// O (B, Tc, CL) unnormalised, m and l (B, NH, Tc): the running softmax of this rank's rows, updated with the
// visiting block kv whose tokens sit at kpos. Dropout's counters use the global sequence length drop.T.
template <class T>
void ring_block_forward(T* O, T* m, T* l, const T* qkv, const TokenPositions& qpos, const T* kv,
                        const TokenPositions& kpos, RingDims d, const Dropout& drop, T* scratch,
                        void (*progress)() = nullptr) {
  const int HD = d.HD, CL = d.CL(), C3 = 3 * CL, C2 = 2 * CL, Tc = d.Tc;
  const T scale = T(1) / std::sqrt(T(HD));
  T* S = scratch;                                                   // (Br, Bc)
  T* mb = scratch + size_t(kFlashQueryBlock) * kFlashKeyBlock * 2;  // (Br) the block's maximum
  T* lb = mb + kFlashQueryBlock;                                    // (Br) the block's sum
  T* Ob = lb + 2 * kFlashQueryBlock;                                // (Br, HD) the block's output
  for (int b = 0; b < d.B; ++b)
    for (int h = 0; h < d.NH; ++h) {
      const T* q = qkv + size_t(b) * Tc * C3 + h * 3 * HD;
      const T* k = kv + size_t(b) * Tc * C2 + h * 2 * HD;
      const T* v = k + HD;
      for (int qr = 0; qr < qpos.runs; ++qr)
        for (int r0 = 0; r0 < qpos.run; r0 += kFlashQueryBlock) {
          const int r1 = std::min(qpos.run, r0 + kFlashQueryBlock), rows = r1 - r0, row0 = qr * qpos.run + r0;
          std::fill(mb, mb + rows, -std::numeric_limits<T>::infinity());
          std::fill(lb, lb + rows, T(0));
          std::fill(Ob, Ob + size_t(rows) * HD, T(0));
          bool seen = false;
          for (int kr = 0; kr < kpos.runs; ++kr)
            for_visible_tiles(qpos, qr, r0, r1, kpos, kr, [&](int c0, int cols, int diag) {
              const int key0 = kr * kpos.run + c0;
              gemm(false, true, rows, cols, HD, scale, q + size_t(row0) * C3, C3, k + size_t(key0) * C2, C2, T(0), S,
                   cols);
              online_softmax_merge(S, rows, cols, diag, mb, lb, Ob, HD, HD);
              if (drop.active())
                for (int i = 0; i < rows; ++i)
                  drop.apply(S + size_t(i) * cols, S + size_t(i) * cols, static_cast<size_t>(cols),
                             drop.attention_index(b, h, size_t(qpos.at(row0 + i)) * drop.T + kpos.at(key0)));
              gemm(false, false, rows, HD, cols, T(1), S, cols, v + size_t(key0) * C2, C2, T(1), Ob, HD);
              seen = true;
            });
          if (progress) progress();
          if (!seen) continue;
          const size_t at = (size_t(b) * d.NH + h) * Tc + row0;
          ring_merge(m + at, l + at, O + (size_t(b) * Tc + row0) * CL + h * HD, CL, mb, lb, Ob, HD, rows, HD);
        }
    }
}

// After the last block: out = O / l, lse = m + log l.
template <class T>
void ring_finish(T* O, T* lse, const T* m, const T* l, RingDims d) {
  const int CL = d.CL();
  for (int b = 0; b < d.B; ++b)
    for (int h = 0; h < d.NH; ++h)
      for (int i = 0; i < d.Tc; ++i) {
        const size_t at = (size_t(b) * d.NH + h) * d.Tc + i;
        Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>(O + (size_t(b) * d.Tc + i) * CL + h * d.HD, d.HD) *=
            T(1) / l[at];
        lse[at] = m[at] + std::log(l[at]);
      }
}

// dQ += into d_qkv's q columns (this rank's queries); the visiting block's dK, dV += into dkv (B, Tc, NH, 2, HD).
// dO, O (B, Tc, CL) and lse (B, NH, Tc) are this rank's final ones.
template <class T>
void ring_block_backward(T* d_qkv, T* dkv, const T* dO, const T* O, const T* qkv, const T* lse,
                         const TokenPositions& qpos, const T* kv, const TokenPositions& kpos, RingDims d,
                         const Dropout& drop, T* scratch, void (*progress)() = nullptr) {
  using ConstRow = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
  using Row = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
  const int HD = d.HD, CL = d.CL(), C3 = 3 * CL, C2 = 2 * CL, Tc = d.Tc;
  const T scale = T(1) / std::sqrt(T(HD));
  T* P = scratch;                                               // (Br, Bc): P, then dropout(P)
  T* dP = scratch + size_t(kFlashQueryBlock) * kFlashKeyBlock;  // (Br, Bc)
  T* D = dP + size_t(kFlashQueryBlock) * kFlashKeyBlock;        // (Br) rowsum(dO ∘ O)
  for (int b = 0; b < d.B; ++b)
    for (int h = 0; h < d.NH; ++h) {
      const size_t qoff = size_t(b) * Tc * C3 + h * 3 * HD, koff = size_t(b) * Tc * C2 + h * 2 * HD;
      const T *q = qkv + qoff, *k = kv + koff, *v = k + HD;
      T *dq = d_qkv + qoff, *dk = dkv + koff, *dv = dk + HD;
      const size_t ooff = size_t(b) * Tc * CL + h * HD;
      const T *o = O + ooff, *g_o = dO + ooff;
      const T* L = lse + (size_t(b) * d.NH + h) * Tc;
      for (int qr = 0; qr < qpos.runs; ++qr)
        for (int r0 = 0; r0 < qpos.run; r0 += kFlashQueryBlock) {
          const int r1 = std::min(qpos.run, r0 + kFlashQueryBlock), rows = r1 - r0, row0 = qr * qpos.run + r0;
          if (progress) progress();
          bool have_D = false;
          for (int kr = 0; kr < kpos.runs; ++kr)
            for_visible_tiles(qpos, qr, r0, r1, kpos, kr, [&](int c0, int cols, int diag) {
              if (!have_D)
                for (int i = 0; i < rows; ++i)
                  D[i] = (ConstRow(g_o + size_t(row0 + i) * CL, HD) * ConstRow(o + size_t(row0 + i) * CL, HD)).sum();
              have_D = true;
              const int key0 = kr * kpos.run + c0;
              gemm(false, true, rows, cols, HD, scale, q + size_t(row0) * C3, C3, k + size_t(key0) * C2, C2, T(0), P,
                   cols);
              gemm(false, true, rows, cols, HD, T(1), g_o + size_t(row0) * CL, CL, v + size_t(key0) * C2, C2, T(0), dP,
                   cols);
              for (int i = 0; i < rows; ++i) {
                T *p = P + size_t(i) * cols, *g = dP + size_t(i) * cols;
                const int valid = std::min(cols, diag + i + 1);
                Row pr(p, valid), gr(g, valid);
                pr = (pr - L[row0 + i]).exp();
                std::fill(p + valid, p + cols, T(0));
                const uint64_t first = drop.attention_index(b, h, size_t(qpos.at(row0 + i)) * drop.T + kpos.at(key0));
                if (drop.active()) drop.apply(g, g, static_cast<size_t>(valid), first);  // dP = dropout(dO·Vᵀ)
                gr = pr * (gr - D[i]);                                                   // dS
                std::fill(g + valid, g + cols, T(0));
                if (drop.active()) drop.apply(p, p, static_cast<size_t>(valid), first);  // dropout(P), for dV
              }
              gemm(true, false, cols, HD, rows, T(1), P, cols, g_o + size_t(row0) * CL, CL, T(1),
                   dv + size_t(key0) * C2, C2);
              gemm(false, false, rows, HD, cols, scale, dP, cols, k + size_t(key0) * C2, C2, T(1),
                   dq + size_t(row0) * C3, C3);
              gemm(true, false, cols, HD, rows, scale, dP, cols, q + size_t(row0) * C3, C3, T(1),
                   dk + size_t(key0) * C2, C2);
            });
        }
    }
}

}  // namespace shardlab
