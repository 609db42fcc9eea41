// Lab 08 — flash attention's online softmax: your flash_merge.cpp (the task: LAB_README.md; the contract and
// the formulas: src/model/flash_merge.h). flash_attention.h tiles the queries and keys, computes each block's
// scores S = Q·Kᵀ and, after your merge, O += S·V; it divides O by l at the end and keeps m + log l for backward.
// Grade it: make lab LAB=08 SOLUTION=<this file>
#include "model/flash_merge.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>

#include "core/not_written.h"

namespace shardlab {

template <class T>
void online_softmax_merge(T* S, int rows, int cols, int diag, T* m, T* l, T* O, int ldo, int HD) {
  // Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>> row(s, n) views n scores as an array: .maxCoeff(),
  // (row - mx).exp(), .sum(); std::exp and std::max work too.
  not_written_yet("online_softmax_merge");
}

template void online_softmax_merge<float>(float*, int, int, int, float*, float*, float*, int, int);
template void online_softmax_merge<double>(double*, int, int, int, double*, double*, double*, int, int);

}  // namespace shardlab
