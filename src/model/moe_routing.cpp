// The mixture-of-experts router's forward and backward (see moe_routing.h).
#include "model/moe_routing.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/linear.h"

namespace shardlab {

template <class T>
void moe_route(MoeRouting<T>& r, T* logits, const T* x, const T* wr, const MoeDims& d, MemoryLedger& ledger,
               RowSplit split) {
  const int R = d.R, E = d.E, k = d.k, G = d.G(), rows = d.rows_per_group();
  if (rows <= 0 || R % rows != 0)
    throw std::logic_error("moe_route: " + std::to_string(R) + " rows do not split into routing groups of " +
                           std::to_string(rows));
  const size_t Rk = size_t(R) * k;
  r.R = R, r.E = E, r.k = k, r.G = G;
  r.probs = Buffer<T>(ledger, Mem::activation, size_t(R) * E, 0, "block.moe.probs", false);
  r.lse = Buffer<T>(ledger, Mem::activation, R, 0, "block.moe.lse", false);
  r.gate = Buffer<T>(ledger, Mem::activation, Rk, 0, "block.moe.gates", false);
  r.slots = Buffer<int32_t>(ledger, Mem::activation, 3 * Rk, 0, "block.moe.slots", true);
  r.counts = Buffer<int32_t>(ledger, Mem::activation, size_t(G) * E + E + 1, 0, "block.moe.counts", true);
  linear_forward(logits, x, wr, static_cast<const T*>(nullptr), R, d.C, E, split);  // logits = x·Wrᵀ
  int32_t* expert = r.expert();
  int32_t* counts = r.counts.data();
  std::vector<int> order(E);
  for (int t = 0; t < R; ++t) {
    const T* l = logits + size_t(t) * E;
    T* p = r.probs.data() + size_t(t) * E;
    const T mx = *std::max_element(l, l + E);
    T sum = 0;
    for (int i = 0; i < E; ++i) sum += (p[i] = std::exp(l[i] - mx));
    for (int i = 0; i < E; ++i) p[i] /= sum;
    r.lse[t] = mx + std::log(sum);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p[a] > p[b]; });  // ties: lower first
    T chosen = 0;
    for (int j = 0; j < k; ++j) chosen += p[order[j]];
    for (int j = 0; j < k; ++j) {
      expert[size_t(t) * k + j] = order[j];
      r.gate[size_t(t) * k + j] = p[order[j]] / chosen;
      ++counts[size_t(t / rows) * E + order[j]];
    }
  }
  // Each expert's slots in token order; capacity keeps each group's first ones.
  int32_t* row = r.row();
  int32_t* list = r.list();
  int32_t* first = counts + size_t(G) * E;
  std::fill(row, row + Rk, -1);
  r.kept = r.dropped = 0;
  for (int e = 0; e < E; ++e) {
    first[e] = r.kept;
    int taken = 0, group = 0;
    for (size_t s = 0; s < Rk; ++s) {
      if (expert[s] != e) continue;
      const int g = static_cast<int>(s / k) / rows;
      if (g != group) group = g, taken = 0;
      if (d.capacity > 0 && taken == d.capacity) {
        ++r.dropped;
        continue;
      }
      row[s] = r.kept;
      list[r.kept++] = static_cast<int32_t>(s);
      ++taken;
    }
  }
  first[E] = r.kept;
  // The losses.
  r.aux = r.z = 0;
  r.aux_terms = r.z_terms = ExactSum{};
  for (int g = 0; g < G; ++g) {
    double aux = 0;
    for (int i = 0; i < E; ++i) {
      double P = 0;
      for (int t = g * rows; t < (g + 1) * rows; ++t) P += r.probs[size_t(t) * E + i];
      aux += double(r.routed(g)[i]) / (double(rows) * k) * (P / rows);
    }
    r.aux += E * aux;
    exact_add(r.aux_terms, E * aux);
  }
  for (int t = 0; t < R; ++t) {
    const double z = double(r.lse[t]) * r.lse[t];
    r.z += z;
    exact_add(r.z_terms, z);
  }
}

template <class T>
void moe_route_backward(T* d_x, T* d_wr, T* d_logits, const T* d_gate, const MoeRouting<T>& r, const T* x, const T* wr,
                        const MoeDims& d, T aux_weight, T z_weight, RowSplit split) {
  const int R = d.R, E = d.E, k = d.k, rows = d.rows_per_group();
  const int32_t* expert = r.expert();
  std::vector<T> dp(E);
  for (int t = 0; t < R; ++t) {
    const T* p = r.probs.data() + size_t(t) * E;
    const int32_t* routed = r.routed(t / rows);
    std::fill(dp.begin(), dp.end(), T(0));
    // gate_j = p_j / S over the chosen k:  dp_m = (d_gate_m − Σ_j d_gate_j·gate_j) / S for m among them.
    T chosen = 0, dot = 0;
    for (int j = 0; j < k; ++j) {
      chosen += p[expert[size_t(t) * k + j]];
      dot += d_gate[size_t(t) * k + j] * r.gate[size_t(t) * k + j];
    }
    for (int j = 0; j < k; ++j) dp[expert[size_t(t) * k + j]] += (d_gate[size_t(t) * k + j] - dot) / chosen;
    // The load-balancing loss: ∂/∂p_i of E·Σ f_i·mean_group p_i = E·f_i / rows (f is a count: constant).
    for (int i = 0; i < E; ++i) dp[i] += aux_weight * T(E) * T(routed[i]) / (T(rows) * k) / T(rows);
    // Through the softmax, plus the z-loss: ∂/∂logit_i of lse² = 2·lse·p_i.
    T pdp = 0;
    for (int i = 0; i < E; ++i) pdp += p[i] * dp[i];
    T* dl = d_logits + size_t(t) * E;
    for (int i = 0; i < E; ++i) dl[i] = p[i] * (dp[i] - pdp) + z_weight * T(2) * r.lse[t] * p[i];
  }
  // d_x = d_logits · Wr;  d_Wr += d_logitsᵀ · x
  linear_backward(d_x, d_wr, static_cast<T*>(nullptr), d_logits, x, wr, R, d.C, E, split);
}

#define SHARDLAB_MOE_ROUTING(T)                                                                                       \
  template void moe_route<T>(MoeRouting<T>&, T*, const T*, const T*, const MoeDims&, MemoryLedger&, RowSplit);        \
  template void moe_route_backward<T>(T*, T*, T*, const T*, const MoeRouting<T>&, const T*, const T*, const MoeDims&, \
                                      T, T, RowSplit);
SHARDLAB_MOE_ROUTING(float)
SHARDLAB_MOE_ROUTING(double)
#undef SHARDLAB_MOE_ROUTING

}  // namespace shardlab
