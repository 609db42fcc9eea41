// Token + learned position embedding as a forward/backward pair:
//   out[b, t] = tok_emb[token[b, t]] + pos_emb[t].   Backward scatters-adds into both tables.
// A rank that holds only positions [t0, t0 + Tl) of each sample (sequence parallel) embeds just those.
#pragma once
#include <cstdint>

namespace shardlab {

// out (B, Tl, C); tokens (B, T); tok_emb (V, C); pos_emb (T, C). Tl < 0: the whole sequence.
template <class T>
void embedding_forward(T* out, const int32_t* tokens, const T* tok_emb, const T* pos_emb, int B, int Tn, int C,
                       int t0 = 0, int Tl = -1) {
  if (Tl < 0) Tl = Tn;
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < Tl; ++t) {
      T* o = out + (static_cast<size_t>(b) * Tl + t) * C;
      const T* te = tok_emb + static_cast<size_t>(tokens[b * Tn + t0 + t]) * C;
      const T* pe = pos_emb + static_cast<size_t>(t0 + t) * C;
      for (int i = 0; i < C; ++i) o[i] = te[i] + pe[i];
    }
}

template <class T>
void embedding_backward(T* d_tok_emb, T* d_pos_emb, const T* d_out, const int32_t* tokens, int B, int Tn, int C,
                        int t0 = 0, int Tl = -1) {
  if (Tl < 0) Tl = Tn;
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < Tl; ++t) {
      const T* g = d_out + (static_cast<size_t>(b) * Tl + t) * C;
      T* dte = d_tok_emb + static_cast<size_t>(tokens[b * Tn + t0 + t]) * C;
      T* dpe = d_pos_emb + static_cast<size_t>(t0 + t) * C;
      for (int i = 0; i < C; ++i) {
        dte[i] += g[i];
        dpe[i] += g[i];
      }
    }
}

}  // namespace shardlab
