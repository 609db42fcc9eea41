// The mixture-of-experts MLP's forward and backward (see moe.h).
#include "model/moe.h"

#include <cstring>

#include "model/gelu.h"
#include "model/linear.h"
#include "model/moe_dispatch.h"
#include "model/moe_experts_exact.h"

namespace shardlab {

namespace {

// Local expert e's weights (P: const T* or T*) and its rows [a, a + rows) of the experts' side.
template <class P>
struct Expert {
  int a, rows;
  P w1, b1, w2, b2;
};
template <class P>
Expert<P> expert(const MoeWeights<P>& w, const ExpertRows& rows, int e, int C, int F) {
  int a = 0;
  for (int i = 0; i < e; ++i) a += rows.of_expert(i);
  return {a,
          rows.of_expert(e),
          w.w1 + size_t(e) * F * C,
          w.b1 + size_t(e) * F,
          w.w2 + size_t(e) * C * F,
          w.b2 + size_t(e) * C};
}

// The kept slots per expert, all E of them, from the router's list.
template <class T>
std::vector<int> kept_per_expert(const MoeRouting<T>& r) {
  std::vector<int> n(r.E);
  for (int e = 0; e < r.E; ++e) n[e] = r.first(e + 1) - r.first(e);
  return n;
}

}  // namespace

template <class T>
void moe_forward(T* out, MoeRecord<T>& rec, const T* x, const MoeWeights<const T*>& w, const MoeShape& s,
                 ExpertExchange<T>& exchange, MemoryLedger& ledger) {
  const MoeDims& d = s.d;
  const int C = d.C, F = s.F;
  MoeRouting<T>& r = rec.routing;
  {
    Buffer<T> logits(ledger, Mem::workspace, size_t(d.R) * d.E, 0, nullptr, false);
    moe_route(r, logits.data(), x, w.wr, d, ledger, s.split);
  }
  const int n = r.kept;
  // Dispatch: the kept slots' rows in the list's order, to the experts.
  Buffer<T> xs(ledger, Mem::workspace, size_t(n) * C, 0, nullptr, false);
  dispatch_rows(xs.data(), x, r, C);
  rec.rows = exchange.counts(kept_per_expert(r).data(), d.E);
  const int m = rec.rows.rows();
  rec.expert_in = Buffer<T>(ledger, Mem::activation, size_t(m) * C, 0, "block.moe.expert_in", false);
  rec.pre = Buffer<T>(ledger, Mem::activation, size_t(m) * F, 0, "block.moe.pre", false);
  rec.act = Buffer<T>(ledger, Mem::activation, size_t(m) * F, 0, "block.moe.act", false);
  exchange.to_experts(xs.data(), n, rec.expert_in.data(), rec.rows, C);
  xs.reset();
  // The experts, one GEMM pair each over all the rows it received (the exact mode: one row at a time).
  Buffer<T> ys(ledger, Mem::workspace, size_t(m) * C, 0, nullptr, false);
  for (int e = 0; e < s.local; ++e) {
    const Expert<const T*> ex = expert(w, rec.rows, e, C, F);
    if (ex.rows == 0) continue;
    const size_t a = ex.a;
    const RowSplit rows = s.split.exact ? RowSplit{ex.rows} : RowSplit{};
    linear_forward(rec.pre.data() + a * F, rec.expert_in.data() + a * C, ex.w1, ex.b1, ex.rows, C, F, rows);
    gelu_forward(rec.act.data() + a * F, rec.pre.data() + a * F, size_t(ex.rows) * F);
    linear_forward(ys.data() + a * C, rec.act.data() + a * F, ex.w2, ex.b2, ex.rows, F, C, rows);
  }
  // Combine: the outputs back in the list's order, then each token's slots in slot order.
  rec.slot_out = Buffer<T>(ledger, Mem::activation, size_t(n) * C, 0, "block.moe.slot_out", false);
  exchange.to_slots(ys.data(), rec.rows, rec.slot_out.data(), n, C);
  combine_rows(out, rec.slot_out.data(), r, C);
}

template <class T>
void moe_backward(T* d_x, const MoeWeights<T*>& g, const T* d_out, const MoeRecord<T>& rec, const T* x,
                  const MoeWeights<const T*>& w, const MoeShape& s, T aux_weight, T z_weight,
                  ExpertExchange<T>& exchange, MemoryLedger& ledger, const MoeWeights<ExactSum*>* sums) {
  const MoeDims& d = s.d;
  const int C = d.C, k = d.k, R = d.R, F = s.F;
  const MoeRouting<T>& r = rec.routing;
  const int n = r.kept, m = rec.rows.rows();
  // Combine's backward: each kept slot's output gradient gate·d_out and its gate's gradient d_out·y.
  Buffer<T> d_slots(ledger, Mem::workspace, size_t(n) * C, 0, nullptr, false);
  Buffer<T> d_gate(ledger, Mem::workspace, size_t(R) * k, 0, nullptr, true);
  combine_rows_backward(d_slots.data(), d_gate.data(), d_out, rec.slot_out.data(), r, C);
  // To the experts, their backward, and back.
  Buffer<T> d_ys(ledger, Mem::workspace, size_t(m) * C, 0, nullptr, false);
  exchange.to_experts(d_slots.data(), n, d_ys.data(), rec.rows, C);
  Buffer<T> d_act(ledger, Mem::workspace, size_t(m) * F, 0, nullptr, false);
  Buffer<T> d_pre(ledger, Mem::workspace, size_t(m) * F, 0, nullptr, false);
  Buffer<T> d_in(ledger, Mem::workspace, size_t(m) * C, 0, nullptr, false);
  for (int e = 0; e < s.local; ++e) {
    const Expert<const T*> ex = expert(w, rec.rows, e, C, F);
    const Expert<T*> gx = expert(g, rec.rows, e, C, F);
    if (ex.rows == 0) continue;
    const size_t a = ex.a;
    if (sums) {
      const Expert<ExactSum*> sx = expert(*sums, rec.rows, e, C, F);
      expert_linear_backward_exact(d_act.data() + a * F, sx.w2, sx.b2, d_ys.data() + a * C, rec.act.data() + a * F,
                                   ex.w2, ex.rows, F, C, ledger);
      gelu_backward(d_pre.data() + a * F, d_act.data() + a * F, rec.pre.data() + a * F, size_t(ex.rows) * F);
      expert_linear_backward_exact(d_in.data() + a * C, sx.w1, sx.b1, d_pre.data() + a * F,
                                   rec.expert_in.data() + a * C, ex.w1, ex.rows, C, F, ledger);
      continue;
    }
    linear_backward(d_act.data() + a * F, gx.w2, gx.b2, d_ys.data() + a * C, rec.act.data() + a * F, ex.w2, ex.rows, F,
                    C);
    gelu_backward(d_pre.data() + a * F, d_act.data() + a * F, rec.pre.data() + a * F, size_t(ex.rows) * F);
    linear_backward(d_in.data() + a * C, gx.w1, gx.b1, d_pre.data() + a * F, rec.expert_in.data() + a * C, ex.w1,
                    ex.rows, C, F);
  }
  exchange.to_slots(d_in.data(), rec.rows, d_slots.data(), n, C);  // d_slots now: each slot's input gradient
  // The router's backward writes d_x; then each kept slot's input gradient, in the list's order.
  {
    Buffer<T> d_logits(ledger, Mem::workspace, size_t(R) * d.E, 0, nullptr, false);
    moe_route_backward(d_x, g.wr, d_logits.data(), d_gate.data(), r, x, w.wr, d, aux_weight, z_weight, s.split);
  }
  dispatch_rows_backward(d_x, d_slots.data(), r, C);
}

#define SHARDLAB_MOE(T)                                                                                                \
  template void moe_forward<T>(T*, MoeRecord<T>&, const T*, const MoeWeights<const T*>&, const MoeShape&,              \
                               ExpertExchange<T>&, MemoryLedger&);                                                     \
  template void moe_backward<T>(T*, const MoeWeights<T*>&, const T*, const MoeRecord<T>&, const T*,                    \
                                const MoeWeights<const T*>&, const MoeShape&, T, T, ExpertExchange<T>&, MemoryLedger&, \
                                const MoeWeights<ExactSum*>*);
SHARDLAB_MOE(float)
SHARDLAB_MOE(double)
#undef SHARDLAB_MOE

}  // namespace shardlab
