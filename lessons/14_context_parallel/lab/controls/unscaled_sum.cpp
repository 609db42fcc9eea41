// Control for lab 14: the block's sum is added as it came, not rescaled to the larger maximum (the output is):
// wrong wherever the running maximum is above the block's
// loses: ring2 ring4 logit curve single
// says: log-sum-exp +[0-9.e+-]+ FAIL
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
    o = o * old_scale + ConstRow(Ob + size_t(i) * ldob, HD) * block_scale;
    l[i] = l[i] * old_scale + lb[i];  // lb · block_scale forgotten
    m[i] = mx;
  }
}

template void ring_merge<float>(float*, float*, float*, int, const float*, const float*, const float*, int, int, int);
template void ring_merge<double>(double*, double*, double*, int, const double*, const double*, const double*, int, int,
                                 int);

}  // namespace shardlab
