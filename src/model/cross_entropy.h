// Softmax cross-entropy over the vocabulary as a forward/backward pair, fused with the softmax.
// Forward turns logits (N, V) into probabilities IN PLACE and returns Σ_n -log p[n, target[n]]
// (accumulated in double). Backward turns the probabilities into d_logits IN PLACE:
//   d_logits = (p - onehot(target)) · scale,   scale = 1 / (tokens in the GLOBAL batch).
// That scale is the model's single loss normalisation (DESIGN.md): every layout passes the same one.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace shardlab {

template <class T>
double cross_entropy_forward(T* logits_to_probs, const int32_t* targets, int N, int V) {
  double loss = 0.0;
  for (int n = 0; n < N; ++n) {
    T* row = logits_to_probs + static_cast<size_t>(n) * V;
    T mx = *std::max_element(row, row + V);
    const T target_logit = row[targets[n]];
    T sum = 0;
    for (int v = 0; v < V; ++v) {
      row[v] = std::exp(row[v] - mx);
      sum += row[v];
    }
    T inv = T(1) / sum;
    for (int v = 0; v < V; ++v) row[v] *= inv;
    loss += std::log(static_cast<double>(sum)) - static_cast<double>(target_logit - mx);  // -log p[target]
  }
  return loss;
}

template <class T>
void cross_entropy_backward(T* probs_to_dlogits, const int32_t* targets, int N, int V, T scale) {
  for (int n = 0; n < N; ++n) {
    T* row = probs_to_dlogits + static_cast<size_t>(n) * V;
    row[targets[n]] -= T(1);
    for (int v = 0; v < V; ++v) row[v] *= scale;
  }
}

}  // namespace shardlab
