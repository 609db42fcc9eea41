// Softmax cross-entropy over the vocabulary as a forward/backward pair, fused with the softmax.
// Forward turns logits (N, V) into probabilities IN PLACE and returns Σ_n -log p[n, target[n]]
// (accumulated in double; with `terms`, each row's loss also goes into that order-free sum, core/exact_sum.h, for
// the exact mode). Backward turns the probabilities into d_logits IN PLACE:
//   d_logits = (p - onehot(target)) · scale,   scale = 1 / (tokens in the GLOBAL batch).
// That scale is the model's single loss normalisation (train/trainer.cpp, loss_scale): every layout passes the same
// one. The vocabulary-parallel form (Megatron's parallel cross-entropy) works on a slice of the vocabulary, columns
// [v0, v0 + Vl) of every row, and combines the slices with three reductions of N values each.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/exact_sum.h"

namespace shardlab {

template <class T>
double cross_entropy_forward(T* logits_to_probs, const int32_t* targets, int N, int V, ExactSum* terms = nullptr) {
  double loss = 0.0;
  for (int n = 0; n < N; ++n) {
    T* row = logits_to_probs + static_cast<size_t>(n) * V;
    T mx = *std::max_element(row, row + V);
    const T target_logit = row[targets[n]];
    T sum = 0;
    ExactSum exact_sum;  // the exact mode: Σ exp order-free, so a vocabulary split over ranks gives the same bits
    for (int v = 0; v < V; ++v) {
      row[v] = std::exp(row[v] - mx);
      if (terms)
        exact_add(exact_sum, double(row[v]));
      else
        sum += row[v];
    }
    if (terms) exact_round(&sum, &exact_sum, 1);
    T inv = T(1) / sum;
    for (int v = 0; v < V; ++v) row[v] *= inv;
    const double row_loss = std::log(static_cast<double>(sum)) - static_cast<double>(target_logit - mx);  // -log p
    loss += row_loss;
    if (terms) exact_add(*terms, row_loss);
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

// Vocabulary-parallel forward: logits (N, Vl) are columns [v0, v0 + Vl) of every row. reduce_max and
// reduce_sum(x, n) combine n values over the slices in place (all-reduces MAX and SUM over tp): the row
// maxima, the Σ exp and the target logits (the slice holding the target gives it, the others 0). Turns
// the slice into its probabilities in place; stats: 3N scratch. Returns Σ -log p[target] over the rows
// where counted(n) (every rank has every row's loss; sequence parallel counts only its own positions).
// The exact mode (terms non-null): each row's Σ exp as an order-free sum, merged over the slices by
// merge_exact(sums, n), and each counted row's −log p added to terms.
template <class T, class Max, class Sum, class Counted, class MergeExact>
double vocab_parallel_cross_entropy_forward(T* logits_to_probs, const int32_t* targets, int N, int Vl, int v0, T* stats,
                                            Max&& reduce_max, Sum&& reduce_sum, Counted&& counted, ExactSum* terms,
                                            MergeExact&& merge_exact) {
  T *mx = stats, *sum = stats + N, *target_logit = stats + 2 * size_t(N);
  for (int n = 0; n < N; ++n) {
    const T* row = logits_to_probs + static_cast<size_t>(n) * Vl;
    mx[n] = *std::max_element(row, row + Vl);
    const int v = targets[n] - v0;
    target_logit[n] = v >= 0 && v < Vl ? row[v] : T(0);
  }
  reduce_max(mx, size_t(N));
  std::vector<ExactSum> exact_sums(terms ? N : 0);
  for (int n = 0; n < N; ++n) {
    T* row = logits_to_probs + static_cast<size_t>(n) * Vl;
    T s = 0;
    for (int v = 0; v < Vl; ++v) {
      row[v] = std::exp(row[v] - mx[n]);
      if (terms)
        exact_add(exact_sums[n], double(row[v]));
      else
        s += row[v];
    }
    sum[n] = s;
  }
  if (terms) {
    merge_exact(exact_sums.data(), size_t(N));
    exact_round(sum, exact_sums.data(), size_t(N));
  } else {
    reduce_sum(sum, size_t(N));
  }
  reduce_sum(target_logit, size_t(N));
  double loss = 0.0;
  for (int n = 0; n < N; ++n) {
    T* row = logits_to_probs + static_cast<size_t>(n) * Vl;
    T inv = T(1) / sum[n];
    for (int v = 0; v < Vl; ++v) row[v] *= inv;
    if (!counted(n)) continue;
    const double row_loss = std::log(static_cast<double>(sum[n])) - static_cast<double>(target_logit[n] - mx[n]);
    loss += row_loss;
    if (terms) exact_add(*terms, row_loss);
  }
  return loss;
}

// The normal mode's form.
template <class T, class Max, class Sum, class Counted>
double vocab_parallel_cross_entropy_forward(T* logits_to_probs, const int32_t* targets, int N, int Vl, int v0, T* stats,
                                            Max&& reduce_max, Sum&& reduce_sum, Counted&& counted) {
  return vocab_parallel_cross_entropy_forward(logits_to_probs, targets, N, Vl, v0, stats, reduce_max, reduce_sum,
                                              counted, static_cast<ExactSum*>(nullptr), [](ExactSum*, size_t) {});
}

// Vocabulary-parallel backward: the probability slice minus the one-hot where this slice holds the
// target, scaled — this slice's d_logits, no communication.
template <class T>
void vocab_parallel_cross_entropy_backward(T* probs_to_dlogits, const int32_t* targets, int N, int Vl, int v0,
                                           T scale) {
  for (int n = 0; n < N; ++n) {
    T* row = probs_to_dlogits + static_cast<size_t>(n) * Vl;
    const int v = targets[n] - v0;
    if (v >= 0 && v < Vl) row[v] -= T(1);
    for (int k = 0; k < Vl; ++k) row[k] *= scale;
  }
}

}  // namespace shardlab
