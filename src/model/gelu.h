// GELU, tanh approximation, as a forward/backward pair (vectorised by Eigen):
//   y = 0.5·x·(1 + tanh(k·(x + 0.044715·x³))),  k = sqrt(2/π).
#pragma once
#include <Eigen/Core>

namespace shardlab {

template <class T>
using ArrMap = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <class T>
using ConstArrMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

template <class T>
void gelu_forward(T* out, const T* in, size_t n) {
  const T k = T(0.7978845608028654);
  ConstArrMap<T> x(in, n);
  ArrMap<T>(out, n) = T(0.5) * x * (T(1) + (k * (x + T(0.044715) * x.cube())).tanh());
}

// d_in = d_out · y'(x),  y' = 0.5·(1 + t) + 0.5·x·(1 - t²)·k·(1 + 3·0.044715·x²),  t = tanh(k·(x + 0.044715·x³)).
template <class T>
void gelu_backward(T* d_in, const T* d_out, const T* in, size_t n) {
  const T k = T(0.7978845608028654);
  ConstArrMap<T> x(in, n);
  Eigen::Array<T, Eigen::Dynamic, 1> t = (k * (x + T(0.044715) * x.cube())).tanh();
  ArrMap<T>(d_in, n) = ConstArrMap<T>(d_out, n) *
                        (T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t.square()) * k * (T(1) + T(3 * 0.044715) * x.square()));
}

}  // namespace shardlab
