// A mixture-of-experts MLP (claim C25) as a forward/backward pair: the router (moe_routing.h) sends each of R
// token rows to k of E experts; every expert is the block's MLP, h → F → h with GELU, with weights of its own:
//   dispatch  each expert's slots, in token order, gathered into rows xs (moe_routing.h's list);
//   experts   ys = gelu(xs·W1_eᵀ + b1_e)·W2_eᵀ + b2_e, expert by expert;
//   combine   out[t] = Σ over the token's slots j, in slot order, of gate_j · ys[slot j] (a dropped slot adds
//             nothing) — a fixed order, so a layout that moves the slots elsewhere (expert parallelism) and
//             back adds the same numbers the same way.
// Weights: W1 (E, F, C), b1 (E, F), W2 (E, C, F), b2 (E, C), each expert's block contiguous. Backward overwrites
// d_x and accumulates into the weight gradients, as linear.h does.
// Leaves out: communication (expert parallelism moves the dispatched rows between ranks around this).
#pragma once
#include <cstring>
#include <vector>

#include "model/gelu.h"
#include "model/linear.h"
#include "model/moe_routing.h"

namespace shardlab {

template <class P>
struct MoeWeights {
  P wr, w1, b1, w2, b2;  // router (E, C); experts as above
};

// What forward keeps for backward.
template <class T>
struct MoeRecord {
  MoeRouting<T> routing;
  std::vector<T> pre, act, ys;  // (n, F), (n, F), (n, C): the kept slots' rows, in the routing's list order
};

namespace moe_detail {
// Expert e's rows [a, b) of the list and its weights.
template <class T, class P>
struct Expert {
  int a, b;
  P w1, b1, w2, b2;
};
template <class T, class P>
Expert<T, P> expert(const MoeRouting<T>& r, const MoeWeights<P>& w, int e, int C, int F) {
  return {r.first[e],           r.first[e + 1],           w.w1 + size_t(e) * F * C,
          w.b1 + size_t(e) * F, w.w2 + size_t(e) * C * F, w.b2 + size_t(e) * C};
}
// The rows of x that the kept slots hold, in list order: (n, C).
template <class T>
std::vector<T> dispatch(const MoeRouting<T>& r, const T* x, int C, int k) {
  std::vector<T> xs(r.list.size() * size_t(C));
  for (size_t q = 0; q < r.list.size(); ++q)
    std::memcpy(xs.data() + q * C, x + size_t(r.list[q] / k) * C, C * sizeof(T));
  return xs;
}
// slot id → its row in the list (−1: dropped).
template <class T>
std::vector<int> row_of_slot(const MoeRouting<T>& r, int R, int k) {
  std::vector<int> row(size_t(R) * k, -1);
  for (size_t q = 0; q < r.list.size(); ++q) row[r.list[q]] = static_cast<int>(q);
  return row;
}
}  // namespace moe_detail

// out (R, C) from x (R, C); logits scratch (R, E); F: each expert's width.
template <class T>
void moe_forward(T* out, MoeRecord<T>& rec, T* logits, const T* x, const MoeWeights<const T*>& w, const MoeDims& d,
                 int F) {
  const int C = d.C, k = d.k;
  MoeRouting<T>& r = rec.routing;
  moe_route(r, logits, x, w.wr, d);
  const std::vector<T> xs = moe_detail::dispatch(r, x, C, k);
  const size_t n = r.list.size();
  rec.pre.assign(n * F, T(0));
  rec.act.assign(n * F, T(0));
  rec.ys.assign(n * C, T(0));
  for (int e = 0; e < d.E; ++e) {
    const auto ex = moe_detail::expert<T>(r, w, e, C, F);
    const int rows = ex.b - ex.a;
    if (rows == 0) continue;
    T* pre = rec.pre.data() + size_t(ex.a) * F;
    T* act = rec.act.data() + size_t(ex.a) * F;
    linear_forward(pre, xs.data() + size_t(ex.a) * C, ex.w1, ex.b1, rows, C, F);
    gelu_forward(act, pre, size_t(rows) * F);
    linear_forward(rec.ys.data() + size_t(ex.a) * C, act, ex.w2, ex.b2, rows, F, C);
  }
  const std::vector<int> row = moe_detail::row_of_slot(r, d.R, k);
  std::memset(static_cast<void*>(out), 0, size_t(d.R) * C * sizeof(T));
  for (int t = 0; t < d.R; ++t)  // combine: each token's slots in slot order
    for (int j = 0; j < k; ++j) {
      const int s = t * k + j, q = row[s];
      if (q < 0) continue;
      VecMap<T>(out + size_t(t) * C, C) += r.gate[s] * ConstVecMap<T>(rec.ys.data() + size_t(q) * C, C);
    }
}

// d_x (R, C) overwritten; g: the weights' gradients, accumulated. d_logits scratch (R, E). aux_weight, z_weight:
// the router losses' weights in the objective.
template <class T>
void moe_backward(T* d_x, const MoeWeights<T*>& g, T* d_logits, const T* d_out, const MoeRecord<T>& rec, const T* x,
                  const MoeWeights<const T*>& w, const MoeDims& d, int F, T aux_weight, T z_weight) {
  const int C = d.C, k = d.k, R = d.R;
  const MoeRouting<T>& r = rec.routing;
  const std::vector<int> row = moe_detail::row_of_slot(r, R, k);
  const size_t n = r.list.size();
  // Combine's backward: each kept slot's output gradient gate·d_out and its gate's gradient d_out·y.
  std::vector<T> d_ys(n * C), d_gate(size_t(R) * k, T(0));
  for (int s = 0; s < R * k; ++s) {
    const int q = row[s];
    if (q < 0) continue;
    ConstVecMap<T> dout(d_out + size_t(s / k) * C, C);
    VecMap<T>(d_ys.data() + size_t(q) * C, C) = r.gate[s] * dout;
    d_gate[s] = dout.dot(ConstVecMap<T>(rec.ys.data() + size_t(q) * C, C));
  }
  // The experts' backward, expert by expert, into d_xs (n, C).
  const std::vector<T> xs = moe_detail::dispatch(r, x, C, k);
  std::vector<T> d_act(n * F), d_pre(n * F), d_xs(n * C);
  for (int e = 0; e < d.E; ++e) {
    const auto ex = moe_detail::expert<T>(r, w, e, C, F);
    const auto gx = moe_detail::expert<T>(r, g, e, C, F);
    const int rows = ex.b - ex.a;
    if (rows == 0) continue;
    const size_t a = ex.a;
    linear_backward(d_act.data() + a * F, gx.w2, gx.b2, d_ys.data() + a * C, rec.act.data() + a * F, ex.w2, rows, F, C);
    gelu_backward(d_pre.data() + a * F, d_act.data() + a * F, rec.pre.data() + a * F, size_t(rows) * F);
    linear_backward(d_xs.data() + a * C, gx.w1, gx.b1, d_pre.data() + a * F, xs.data() + a * C, ex.w1, rows, C, F);
  }
  // The router's backward writes d_x; then each kept slot's input gradient, in list order.
  moe_route_backward(d_x, g.wr, d_logits, d_gate.data(), r, x, w.wr, d, aux_weight, z_weight);
  for (size_t q = 0; q < n; ++q)
    VecMap<T>(d_x + size_t(r.list[q] / k) * C, C) += ConstVecMap<T>(d_xs.data() + q * C, C);
}

}  // namespace shardlab
