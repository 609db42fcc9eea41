// The textbook piece of ring attention (claim C24): one visiting K/V block's partial softmax folded into the
// running softmax of a block of query rows. Alone in one file so that another implementation can take its
// place (a seam: `make seam SEAM=src/model/ring_merge.cpp WITH=FILE`, docs/architecture.md); the tiles, the
// GEMMs and the ring's messages stay in ring_attention.h and parallel/context_parallel.cpp.
// Row i's running state over the keys seen so far: the maximum m[i], the sum l[i] = Σ e^(s − m[i]) and the
// unnormalised output O[i] = Σ e^(s − m[i])·v (HD values, rows ldo apart). The block's partial (mb, lb, Ob,
// rows ldob apart) is the same over the block's keys alone. With mx = max(m[i], mb[i]):
//   O[i] = O[i]·e^(m[i] − mx) + Ob[i]·e^(mb[i] − mx);   l[i] = l[i]·e^(m[i] − mx) + lb[i]·e^(mb[i] − mx);   m[i] = mx
// — the log-sum-exp rule: both sides rescaled to the larger maximum, so no exponent is ever positive. The
// first block meets m = −∞, l = 0, O = 0, and e^(−∞) = 0 leaves just the block's partial. At the end
// O / l is the attention output and m + log l its log-sum-exp.
#pragma once

namespace shardlab {

template <class T>
void ring_merge(T* m, T* l, T* O, int ldo, const T* mb, const T* lb, const T* Ob, int ldob, int rows, int HD);

}  // namespace shardlab
