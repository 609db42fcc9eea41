// Control for lab 15: the dispatch copies only each token's first choice (slot j = 0); the rows of its other slots
// stay zeros, and backward adds only the first slots' gradients: the experts of every second choice compute on zeros
// loses: tokens ep2 ep4 capacity curve
// says: expected token [0-9]+'s row, got a row of zeros
#include "model/moe_dispatch.h"

#include <cstring>

#include "core/gemm.h"
#include "model/linear.h"

namespace shardlab {

template <class T>
void dispatch_rows(T* xs, const T* x, const MoeRouting<T>& r, int C) {
  const int32_t* list = r.list();
  std::memset(static_cast<void*>(xs), 0, size_t(r.kept) * C * sizeof(T));
  for (int q = 0; q < r.kept; ++q)
    if (list[q] % r.k == 0)  // slots j >= 1 forgotten
      std::memcpy(xs + size_t(q) * C, x + size_t(list[q] / r.k) * C, C * sizeof(T));
}

template <class T>
void dispatch_rows_backward(T* d_x, const T* d_xs, const MoeRouting<T>& r, int C) {
  const int32_t* list = r.list();
  for (int q = 0; q < r.kept; ++q)
    if (list[q] % r.k == 0) VecMap<T>(d_x + size_t(list[q] / r.k) * C, C) += ConstVecMap<T>(d_xs + size_t(q) * C, C);
}

std::vector<int> rows_per_rank(const int* kept_per_expert, int E, int ranks) {
  const int per_rank = E / ranks;
  std::vector<int> rows(ranks, 0);
  for (int e = 0; e < E; ++e) rows[e / per_rank] += kept_per_expert[e];
  return rows;
}

std::vector<int> rows_from_sources(const ExpertRows& rows) {
  std::vector<int> from(rows.sources, 0);
  for (int s = 0; s < rows.sources; ++s)
    for (int e = 0; e < rows.local; ++e) from[s] += rows.from(s, e);
  return from;
}

namespace {
// Where source s's rows for local expert e start, in arrival order and in the experts' order; f(arrival row,
// expert row, rows) for each (s, e).
template <class F>
void for_each_piece(const ExpertRows& rows, F&& f) {
  std::vector<size_t> by_expert(rows.count.size());
  size_t at = 0;
  for (int e = 0; e < rows.local; ++e)
    for (int s = 0; s < rows.sources; ++s) by_expert[size_t(s) * rows.local + e] = at, at += rows.from(s, e);
  at = 0;
  for (int s = 0; s < rows.sources; ++s)
    for (int e = 0; e < rows.local; ++e) {
      f(at, by_expert[size_t(s) * rows.local + e], size_t(rows.from(s, e)));
      at += rows.from(s, e);
    }
}
}  // namespace

template <class T>
void arrival_to_experts(T* expert_rows, const T* arrived, const ExpertRows& rows, int C) {
  for_each_piece(rows, [&](size_t a, size_t e, size_t n) {
    std::memcpy(static_cast<void*>(expert_rows + e * C), arrived + a * C, n * C * sizeof(T));
  });
}

template <class T>
void experts_to_arrival(T* arrived, const T* expert_rows, const ExpertRows& rows, int C) {
  for_each_piece(rows, [&](size_t a, size_t e, size_t n) {
    std::memcpy(static_cast<void*>(arrived + a * C), expert_rows + e * C, n * C * sizeof(T));
  });
}

template <class T>
void combine_rows(T* out, const T* slot_out, const MoeRouting<T>& r, int C) {
  std::memset(static_cast<void*>(out), 0, size_t(r.R) * C * sizeof(T));
  const int32_t* row = r.row();
  for (int t = 0; t < r.R; ++t)
    for (int j = 0; j < r.k; ++j) {
      const int slot = t * r.k + j, q = row[slot];
      if (q < 0) continue;  // dropped by capacity
      VecMap<T>(out + size_t(t) * C, C) += r.gate[slot] * ConstVecMap<T>(slot_out + size_t(q) * C, C);
    }
}

template <class T>
void combine_rows_backward(T* d_slot, T* d_gate, const T* d_out, const T* slot_out, const MoeRouting<T>& r, int C) {
  const int32_t* row = r.row();
  for (int slot = 0; slot < r.R * r.k; ++slot) {
    const int q = row[slot];
    if (q < 0) continue;
    ConstVecMap<T> dout(d_out + size_t(slot / r.k) * C, C);
    VecMap<T>(d_slot + size_t(q) * C, C) = r.gate[slot] * dout;
    d_gate[slot] = dout.dot(ConstVecMap<T>(slot_out + size_t(q) * C, C));
  }
}

#define SHARDLAB_MOE_DISPATCH(T)                                                    \
  template void dispatch_rows<T>(T*, const T*, const MoeRouting<T>&, int);          \
  template void dispatch_rows_backward<T>(T*, const T*, const MoeRouting<T>&, int); \
  template void arrival_to_experts<T>(T*, const T*, const ExpertRows&, int);        \
  template void experts_to_arrival<T>(T*, const T*, const ExpertRows&, int);        \
  template void combine_rows<T>(T*, const T*, const MoeRouting<T>&, int);           \
  template void combine_rows_backward<T>(T*, T*, const T*, const T*, const MoeRouting<T>&, int);
SHARDLAB_MOE_DISPATCH(float)
SHARDLAB_MOE_DISPATCH(double)
#undef SHARDLAB_MOE_DISPATCH

}  // namespace shardlab
