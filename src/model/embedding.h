// Token + learned position embedding as a forward/backward pair:
//   out[b, t] = tok_emb[token[b, t]] + pos_emb[t].   Backward scatters-adds into both tables.
#pragma once
#include <cstdint>

namespace shardlab {

// out (B, T, C); tokens (B, T); tok_emb (V, C); pos_emb (T, C).
template <class T>
void embedding_forward(T* out, const int32_t* tokens, const T* tok_emb, const T* pos_emb, int B, int Tn, int C) {
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < Tn; ++t) {
      T* o = out + (static_cast<size_t>(b) * Tn + t) * C;
      const T* te = tok_emb + static_cast<size_t>(tokens[b * Tn + t]) * C;
      const T* pe = pos_emb + static_cast<size_t>(t) * C;
      for (int i = 0; i < C; ++i) o[i] = te[i] + pe[i];
    }
}

template <class T>
void embedding_backward(T* d_tok_emb, T* d_pos_emb, const T* d_out, const int32_t* tokens, int B, int Tn, int C) {
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < Tn; ++t) {
      const T* g = d_out + (static_cast<size_t>(b) * Tn + t) * C;
      T* dte = d_tok_emb + static_cast<size_t>(tokens[b * Tn + t]) * C;
      T* dpe = d_pos_emb + static_cast<size_t>(t) * C;
      for (int i = 0; i < C; ++i) {
        dte[i] += g[i];
        dpe[i] += g[i];
      }
    }
}

}  // namespace shardlab
