// The textbook piece of flash attention (claim C5): the online softmax, one key block merged into the running
// softmax of a block of query rows. Alone in one file so that another implementation can take its place (a
// seam: `make seam SEAM=src/model/flash_merge.cpp WITH=FILE`, docs/architecture.md); the tiling, the GEMMs
// and dropout stay in flash_attention.h.
// For each query row i of `rows`, S holds its scores against the block's `cols` keys; key j is visible to the
// row iff j ≤ diag + i (causal; diag = first query − first key of the block). With the row's running maximum
// m[i], running sum l[i] and unnormalised output O[i] (HD values, rows ldo apart):
//   mx = max(m[i], max_j s_j);   if mx > m[i]: l[i] *= e^(m[i] − mx), O[i] *= e^(m[i] − mx), m[i] = mx
//   s_j = e^(s_j − mx) for the visible keys, 0 for the others;   l[i] += Σ_j s_j
// Afterwards S holds the block's probabilities up to the row's common factor, ready for O += S·V.
#pragma once

namespace shardlab {

template <class T>
void online_softmax_merge(T* S, int rows, int cols, int diag, T* m, T* l, T* O, int ldo, int HD);

}  // namespace shardlab
