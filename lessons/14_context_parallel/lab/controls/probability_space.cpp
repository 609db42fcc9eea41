// Control for lab 14: merges in probability space: both sides multiplied by e^max (the running state kept against
// a maximum of 0), mathematically the same softmax — until a score passes ~709 and e^score overflows to inf
// loses: logit curve
// says: logit scale 1000 .*first element past the tolerance.*got -?(nan|inf)$
#include "model/ring_merge.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>

namespace shardlab {

template <class T>
void ring_merge(T* m, T* l, T* O, int ldo, const T* mb, const T* lb, const T* Ob, int ldob, int rows, int HD) {
  using Row = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
  using ConstRow = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;
  for (int i = 0; i < rows; ++i) {
    const T old_scale = std::exp(m[i]), block_scale = std::exp(mb[i]);  // e^(−∞) = 0 before the first block
    Row o(O + size_t(i) * ldo, HD);
    o = o * old_scale + ConstRow(Ob + size_t(i) * ldob, HD) * block_scale;
    l[i] = l[i] * old_scale + lb[i] * block_scale;
    m[i] = T(0);
  }
}

template void ring_merge<float>(float*, float*, float*, int, const float*, const float*, const float*, int, int, int);
template void ring_merge<double>(double*, double*, double*, int, const double*, const double*, const double*, int, int,
                                 int);

}  // namespace shardlab
