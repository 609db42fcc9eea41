// Token + learned position embedding as a forward/backward pair:
//   out[b, t] = tok_emb[token[b, t]] + pos_emb[t].   Backward scatters-adds into both tables.
// tokens are the sequence this rank holds, Tn per sample; a rank that holds only rows [t0, t0 + Tl) of it
// (sequence parallel) embeds just those. Under context parallelism the sequence is this rank's tokens of
// each sample and row t sits at global position pos.at(t) (token_positions.h); pos.run = 0: row t is
// position t.
#pragma once
#include <cstdint>

#include "core/exact_sum.h"
#include "model/row_split.h"
#include "model/token_positions.h"

namespace shardlab {

// out (B, Tl, C); tokens (B, Tn); tok_emb (V, C); pos_emb (T, C). Tl < 0: the whole sequence.
template <class T>
void embedding_forward(T* out, const int32_t* tokens, const T* tok_emb, const T* pos_emb, int B, int Tn, int C,
                       int t0 = 0, int Tl = -1, TokenPositions pos = {}) {
  if (Tl < 0) Tl = Tn;
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < Tl; ++t) {
      T* o = out + (static_cast<size_t>(b) * Tl + t) * C;
      const T* te = tok_emb + static_cast<size_t>(tokens[b * Tn + t0 + t]) * C;
      const T* pe = pos_emb + static_cast<size_t>(pos.run ? pos.at(t0 + t) : t0 + t) * C;
      for (int i = 0; i < C; ++i) o[i] = te[i] + pe[i];
    }
}

template <class T>
void embedding_backward(T* d_tok_emb, T* d_pos_emb, const T* d_out, const int32_t* tokens, int B, int Tn, int C,
                        int t0 = 0, int Tl = -1, TokenPositions pos = {}, RowSplit split = {},
                        ExactSum* tok_sums = nullptr, ExactSum* pos_sums = nullptr) {
  if (Tl < 0) Tl = Tn;
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < Tl; ++t) {
      const int group = split.group_of(size_t(b), size_t(B));  // sample b's tables (row_split.h)
      const T* g = d_out + (static_cast<size_t>(b) * Tl + t) * C;
      const size_t token_row = static_cast<size_t>(tokens[b * Tn + t0 + t]) * C,
                   pos_row = static_cast<size_t>(pos.run ? pos.at(t0 + t) : t0 + t) * C;
      if (tok_sums) {  // the exact mode: each token's row into the order-free sums (the tables are whole on every rank)
        exact_add(tok_sums + token_row, g, size_t(C));
        exact_add(pos_sums + pos_row, g, size_t(C));
        continue;
      }
      T* dte = split.grad_of(d_tok_emb, group) + token_row;
      T* dpe = split.grad_of(d_pos_emb, group) + pos_row;
      for (int i = 0; i < C; ++i) {
        dte[i] += g[i];
        dpe[i] += g[i];
      }
    }
}

}  // namespace shardlab
