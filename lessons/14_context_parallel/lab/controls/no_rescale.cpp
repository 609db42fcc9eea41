// Control for lab 14: when the visiting block's maximum is the larger, the running output is not rescaled to it
// (the sum is): the old keys keep weights measured against the old maximum
// loses: ring2 ring4 logit curve single
// says: output +[0-9.e+-]+ FAIL, log-sum-exp +[0-9.e+-]+ ok
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
    const T mx = std::max(m[i], mb[i]);
    const T old_scale = std::exp(m[i] - mx), block_scale = std::exp(mb[i] - mx);
    Row o(O + size_t(i) * ldo, HD);
    o = o + ConstRow(Ob + size_t(i) * ldob, HD) * block_scale;  // o · old_scale forgotten
    l[i] = l[i] * old_scale + lb[i] * block_scale;
    m[i] = mx;
  }
}

template void ring_merge<float>(float*, float*, float*, int, const float*, const float*, const float*, int, int, int);
template void ring_merge<double>(double*, double*, double*, int, const double*, const double*, const double*, int, int,
                                 int);

}  // namespace shardlab
