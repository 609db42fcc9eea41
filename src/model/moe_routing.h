// A mixture-of-experts router (claim C25) as a forward/backward pair: which experts each token goes to, with
// which weight, and the two router losses. For R token rows x (R, C) and the router's weight Wr (E, C):
//   logits = x·Wrᵀ;  p = softmax(logits);  the token's k slots are its k largest p (ties: the lower expert
//   index first), in that order;  gate_j = p_j / Σ_{m in the k} p_m  (renormalised over the chosen k).
// Capacity (capacity > 0): expert e computes at most `capacity` slots, the first ones by token position (then
// slot); a slot past it is dropped — it contributes nothing (the residual carries the token) — and counted.
// Losses over the R rows (each its own number; the caller scales and adds them):
//   load balance (Switch, Fedus et al. 2021, eq. 4; GShard's with top-k):  E · Σ_i f_i · P_i, with
//     f_i = (slots routed to expert i, before capacity) / (R·k) — a count: no gradient flows through it — and
//     P_i = mean over the rows of p_i;
//   router z-loss (ST-MoE, Zoph et al. 2022, eq. 5):  mean over the rows of logsumexp(logits)².
// Backward: the gates' gradient (from the combine) through the renormalisation and the softmax, plus the two
// losses' gradients (scaled by the caller's weights), into d_logits, then Wr and x.
// Leaves out: noisy top-k and random or expert-choice routing (deterministic, by position, as every layout
// must draw the same routing).
#pragma once
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/gemm.h"

namespace shardlab {

struct MoeDims {
  int R = 0;         // token rows
  int C = 0;         // hidden size
  int E = 0;         // experts
  int k = 1;         // slots per token
  int capacity = 0;  // slots per expert kept (0: dropless)
};

// What the router decided for R rows; forward fills it, backward reads it.
template <class T>
struct MoeRouting {
  std::vector<T> probs;     // (R, E) softmax of the logits
  std::vector<T> lse;       // (R) logsumexp of each row's logits (the z-loss)
  std::vector<int> expert;  // (R, k) each slot's expert, in slot order
  std::vector<T> gate;      // (R, k) renormalised gates
  std::vector<char> kept;   // (R, k) 0 if capacity dropped the slot
  std::vector<int> routed;  // (E) slots chosen per expert, before capacity
  std::vector<int> first;   // (E + 1) expert e computes slots list[first[e] … first[e+1])
  std::vector<int> list;    // slot ids t·k + j of each expert, token order then slot order (kept ones only)
  int dropped = 0;          // slots capacity dropped
  double aux = 0, z = 0;    // the load-balancing loss and the z-loss of these rows (unweighted)
};

// logits scratch (R, E). Fills r from x (R, C) and the router weight wr (E, C).
template <class T>
void moe_route(MoeRouting<T>& r, T* logits, const T* x, const T* wr, const MoeDims& d) {
  const int R = d.R, E = d.E, k = d.k;
  gemm(false, true, R, E, d.C, T(1), x, d.C, wr, d.C, T(0), logits, E);
  r.probs.assign(size_t(R) * E, T(0));
  r.lse.assign(R, T(0));
  r.expert.assign(size_t(R) * k, 0);
  r.gate.assign(size_t(R) * k, T(0));
  r.kept.assign(size_t(R) * k, 1);
  r.routed.assign(E, 0);
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
      r.expert[size_t(t) * k + j] = order[j];
      r.gate[size_t(t) * k + j] = p[order[j]] / chosen;
      ++r.routed[order[j]];
    }
  }
  // Each expert's slots in token order; capacity keeps the first ones.
  r.first.assign(E + 1, 0);
  r.list.clear();
  r.dropped = 0;
  for (int e = 0; e < E; ++e) {
    r.first[e] = static_cast<int>(r.list.size());
    int taken = 0;
    for (int s = 0; s < R * k; ++s) {
      if (r.expert[s] != e) continue;
      if (d.capacity > 0 && taken == d.capacity) {
        r.kept[s] = 0;
        ++r.dropped;
        continue;
      }
      r.list.push_back(s);
      ++taken;
    }
  }
  r.first[E] = static_cast<int>(r.list.size());
  // The losses.
  double aux = 0, z = 0;
  for (int i = 0; i < E; ++i) {
    double P = 0;
    for (int t = 0; t < R; ++t) P += r.probs[size_t(t) * E + i];
    aux += double(r.routed[i]) / (double(R) * k) * (P / R);
  }
  for (int t = 0; t < R; ++t) z += double(r.lse[t]) * r.lse[t];
  r.aux = E * aux;
  r.z = z / R;
}

// d_gate (R, k): the gradient of the objective with respect to each slot's gate (0 for dropped slots).
// aux_weight, z_weight: the losses' weights in the objective. d_logits scratch (R, E). Writes d_x (R, C)
// (overwritten) and accumulates the router weight's gradient into d_wr (E, C).
template <class T>
void moe_route_backward(T* d_x, T* d_wr, T* d_logits, const T* d_gate, const MoeRouting<T>& r, const T* x, const T* wr,
                        const MoeDims& d, T aux_weight, T z_weight) {
  const int R = d.R, E = d.E, k = d.k;
  std::vector<T> dp(E);
  for (int t = 0; t < R; ++t) {
    const T* p = r.probs.data() + size_t(t) * E;
    std::fill(dp.begin(), dp.end(), T(0));
    // gate_j = p_j / S over the chosen k:  dp_m = (d_gate_m − Σ_j d_gate_j·gate_j) / S for m among them.
    T chosen = 0, dot = 0;
    for (int j = 0; j < k; ++j) {
      chosen += p[r.expert[size_t(t) * k + j]];
      dot += d_gate[size_t(t) * k + j] * r.gate[size_t(t) * k + j];
    }
    for (int j = 0; j < k; ++j) dp[r.expert[size_t(t) * k + j]] += (d_gate[size_t(t) * k + j] - dot) / chosen;
    // The load-balancing loss: ∂/∂p_i of E·Σ f_i·mean_t p_i = E·f_i / R (f is a count: constant).
    for (int i = 0; i < E; ++i) dp[i] += aux_weight * T(E) * T(r.routed[i]) / (T(R) * k) / T(R);
    // Through the softmax, plus the z-loss: ∂/∂logit_i of mean_t lse_t² = 2·lse_t·p_i / R.
    T pdp = 0;
    for (int i = 0; i < E; ++i) pdp += p[i] * dp[i];
    T* dl = d_logits + size_t(t) * E;
    for (int i = 0; i < E; ++i) dl[i] = p[i] * (dp[i] - pdp) + z_weight * T(2) * r.lse[t] * p[i] / T(R);
  }
  gemm(false, false, R, d.C, E, T(1), d_logits, E, wr, d.C, T(0), d_x, d.C);  // d_x = d_logits · Wr
  gemm(true, false, E, d.C, R, T(1), d_logits, E, x, d.C, T(1), d_wr, d.C);   // d_Wr += d_logitsᵀ · x
}

}  // namespace shardlab
