// The mixture-of-experts layer token by token (see moe_plain.h).
#include "model/moe_plain.h"

#include <vector>

#include "model/gelu.h"
#include "model/linear.h"

namespace shardlab {

namespace {
// Expert e's four tensors inside all E experts' (P: const T* or T*).
template <class P>
struct One {
  P w1, b1, w2, b2;
};
template <class P>
One<P> one(const MoeWeights<P>& w, int e, int C, int F) {
  return {w.w1 + size_t(e) * F * C, w.b1 + size_t(e) * F, w.w2 + size_t(e) * C * F, w.b2 + size_t(e) * C};
}
}  // namespace

template <class T>
void moe_plain_forward(T* out, const MoeRouting<T>& r, const T* x, const MoeWeights<const T*>& w, int C, int F) {
  const int R = r.R, k = r.k;
  std::vector<T> pre(F), act(F), y(C);
  for (int t = 0; t < R; ++t) {
    VecMap<T> o(out + size_t(t) * C, C);
    o.setZero();
    for (int j = 0; j < k; ++j) {
      const int s = t * k + j;
      if (r.row()[s] < 0) continue;  // dropped by capacity: the slot adds nothing
      const One<const T*> e = one(w, r.expert()[s], C, F);
      linear_forward(pre.data(), x + size_t(t) * C, e.w1, e.b1, 1, C, F);
      gelu_forward(act.data(), pre.data(), F);
      linear_forward(y.data(), act.data(), e.w2, e.b2, 1, F, C);
      o += r.gate[s] * ConstVecMap<T>(y.data(), C);
    }
  }
}

template <class T>
void moe_plain_backward(T* d_x, const MoeWeights<T*>& g, const T* d_out, const MoeRouting<T>& r, const T* x,
                        const MoeWeights<const T*>& w, const MoeDims& d, int F, T aux_weight, T z_weight) {
  const int C = d.C, R = r.R, k = r.k;
  std::vector<T> pre(F), act(F), y(C), dy(C), d_act(F), d_pre(F), d_in(C);
  std::vector<T> d_gate(size_t(R) * k, T(0)), d_slots(size_t(R) * C, T(0)), d_logits(size_t(R) * r.E);
  for (int t = 0; t < R; ++t)
    for (int j = 0; j < k; ++j) {
      const int s = t * k + j;
      if (r.row()[s] < 0) continue;
      const One<const T*> e = one(w, r.expert()[s], C, F);
      const One<T*> ge = one(g, r.expert()[s], C, F);
      const T* xt = x + size_t(t) * C;
      ConstVecMap<T> dout(d_out + size_t(t) * C, C);
      linear_forward(pre.data(), xt, e.w1, e.b1, 1, C, F);
      gelu_forward(act.data(), pre.data(), F);
      linear_forward(y.data(), act.data(), e.w2, e.b2, 1, F, C);
      d_gate[s] = dout.dot(ConstVecMap<T>(y.data(), C));  // out[t] = Σ gate·y: ∂/∂gate = d_out·y
      VecMap<T>(dy.data(), C) = r.gate[s] * dout;         // ∂/∂y = gate·d_out
      linear_backward(d_act.data(), ge.w2, ge.b2, dy.data(), act.data(), e.w2, 1, F, C);
      gelu_backward(d_pre.data(), d_act.data(), pre.data(), F);
      linear_backward(d_in.data(), ge.w1, ge.b1, d_pre.data(), xt, e.w1, 1, C, F);
      VecMap<T>(d_slots.data() + size_t(t) * C, C) += ConstVecMap<T>(d_in.data(), C);
    }
  moe_route_backward(d_x, g.wr, d_logits.data(), d_gate.data(), r, x, w.wr, d, aux_weight, z_weight);
  MatMap<T>(d_x, R, C) += ConstMatMap<T>(d_slots.data(), R, C);
}

#define SHARDLAB_MOE_PLAIN(T)                                                                                    \
  template void moe_plain_forward<T>(T*, const MoeRouting<T>&, const T*, const MoeWeights<const T*>&, int, int); \
  template void moe_plain_backward<T>(T*, const MoeWeights<T*>&, const T*, const MoeRouting<T>&, const T*,       \
                                      const MoeWeights<const T*>&, const MoeDims&, int, T, T);
SHARDLAB_MOE_PLAIN(float)
SHARDLAB_MOE_PLAIN(double)
#undef SHARDLAB_MOE_PLAIN

}  // namespace shardlab
