// The head's forward and backward (see head.h).
#include "model/head.h"

#include <cstring>

#include "core/ledger.h"
#include "model/cross_entropy.h"
#include "model/layernorm.h"
#include "model/linear.h"
#include "model/region_products.h"
#include "model/whole_samples.h"

namespace shardlab {

template <class T>
double head_forward(HeadRecord<T>& h, const int32_t* targets, UnitAccess<T>& access, const ParamLayout& layout,
                    const GPTConfig& cfg, const ModelSlice& slice, const BlockDims& d, bool bf16, BlockScratch<T>& ws,
                    HeadHooks<T>& hooks, MemoryLedger& ledger, ExactSum* loss_terms) {
  const int unit = cfg.layers + 1, C = cfg.hidden, V = cfg.vocab;
  const size_t R = d.rows();
  const int Tl = d.T_local, t0 = d.first_row, Tc = d.T_ctx;
  const T* base = access.params(unit, false);
  auto P = [&](size_t offset) { return base + (offset - layout.unit_begin(unit)); };
  const T* hx = h.x.half() ? ws.x : h.x.data();
  h.lnf = Saved<T>(ledger, "head.lnf", R * C, bf16);
  h.lnf_mean = Saved<T>(ledger, "head.lnf_mean", R, false);
  h.lnf_rstd = Saved<T>(ledger, "head.lnf_rstd", R, false);
  // The loss's softmax in the compute type: this rank's V/t columns of the head's rows (d.region_rows():
  // with sequence parallelism the head runs the whole sequence; without, its rows are the residual's; the exact
  // mode under cp: this rank's whole samples, whole_samples.h).
  const int t = slice.tp, Vl = V / t, v0 = slice.tp_rank * Vl;
  const BlockDims dr = region_of(d);
  const bool whole = runs_whole_samples(d);
  const size_t N = t > 1 || whole ? dr.region_rows() : R;
  h.probs = Saved<T>(ledger, "head.probs", N * Vl, false);
  T* lnf = produce(h.lnf, ws.ln1);
  layernorm_forward(lnf, h.lnf_mean.data(), h.lnf_rstd.data(), hx, P(layout.lnf_w), P(layout.lnf_b),
                    static_cast<int>(R), C);
  keep(h.lnf, lnf);
  if (t == 1 && !whole) {  // the whole head on one rank: no seam at all
    column_forward(h.probs.data(), lnf, P(layout.lm_head), static_cast<const T*>(nullptr), static_cast<int>(R), C, V,
                   d.split, V / cfg.heads);
    access.params_done(unit, false);
    return cross_entropy_forward(h.probs.data(), targets, static_cast<int>(R), V, loss_terms);
  }
  // Vocabulary-parallel: f (SP: the all-gather along s), this rank's logits, the parallel cross-entropy. (The
  // exact mode under cp: the rows of this rank's whole samples gathered first.)
  const T* in = hooks.head_input(lnf, ws.full_a, d);
  column_forward(h.probs.data(), in, P(layout.lm_head), static_cast<const T*>(nullptr), static_cast<int>(N), C, Vl,
                 dr.split, V / cfg.heads);
  access.params_done(unit, false);
  if (t == 1) return cross_entropy_forward(h.probs.data(), targets, static_cast<int>(N), V, loss_terms);
  Buffer<T> stats(ledger, Mem::workspace, 3 * N, 0, nullptr, false);
  const bool sp = slice.sequence_parallel;
  return vocab_parallel_cross_entropy_forward(
      h.probs.data(), targets, static_cast<int>(N), Vl, v0, stats.data(),
      [&](T* x, size_t n) { hooks.vocab_max(x, n); }, [&](T* x, size_t n) { hooks.vocab_sum(x, n); },
      [&](int n) { return !sp || (n % Tc >= t0 && n % Tc < t0 + Tl); },  // SP: this rank's rows' loss
      loss_terms, [&](ExactSum* x, size_t n) { hooks.vocab_sum_exact(x, n); });
}

template <class T>
void head_backward(HeadRecord<T>& h, const int32_t* targets, T loss_scale, UnitAccess<T>& access,
                   const ParamLayout& layout, const GPTConfig& cfg, const ModelSlice& slice, const BlockDims& d,
                   BlockScratch<T>& ws, HeadHooks<T>& hooks, MemoryLedger& ledger) {
  const int unit = cfg.layers + 1, C = cfg.hidden, V = cfg.vocab;
  const size_t R = d.rows();
  const T* wbase = access.params(unit, true);
  T* gbase = access.grads(unit);
  auto P = [&](size_t offset) { return wbase + (offset - layout.unit_begin(unit)); };
  auto G = [&](size_t offset) { return gbase + (offset - layout.unit_begin(unit)); };
  const int t = slice.tp, Vl = V / t, v0 = slice.tp_rank * Vl;
  if (d.split.exact) {  // linear_exact.h: the input gradient summed order-free over vocabulary chunks of V/heads
    const BlockDims dr = region_of(d);  // under cp: this rank's whole samples (whole_samples.h)
    const bool whole = runs_whole_samples(d);
    const int N = static_cast<int>(t == 1 && !whole ? R : dr.region_rows());
    if (t == 1)
      cross_entropy_backward(h.probs.data(), targets, N, V, loss_scale);
    else
      vocab_parallel_cross_entropy_backward(h.probs.data(), targets, N, Vl, v0, loss_scale);
    const T* in = t == 1 && !whole ? use(h.lnf, ws.ln1) : hooks.head_input(use(h.lnf, ws.ln1), ws.full_a, d);
    exact_detail::Sums<T> s(ledger, N, C, dr.split.groups, Vl / (V / cfg.heads));
    linear_backward_exact(static_cast<T*>(nullptr), s.sums.data(), s.scratch.data(), G(layout.lm_head),
                          static_cast<T*>(nullptr), h.probs.data(), in, P(layout.lm_head), N, C, Vl, dr.split,
                          Chunks{V / cfg.heads, 0});
    hooks.head_input_backward_exact(s.sums.data(), ws.d_ln, dr);
  } else if (t == 1) {
    cross_entropy_backward(h.probs.data(), targets, static_cast<int>(R), V, loss_scale);  // now d_logits
    linear_backward(ws.d_ln, G(layout.lm_head), static_cast<T*>(nullptr), h.probs.data(), use(h.lnf, ws.ln1),
                    P(layout.lm_head), static_cast<int>(R), C, V, d.split);
  } else {  // this slice's d_logits and weight gradient; the input gradient summed over the slices (f)
    const int N = static_cast<int>(d.region_rows());
    vocab_parallel_cross_entropy_backward(h.probs.data(), targets, N, Vl, v0, loss_scale);
    const T* in = hooks.head_input(use(h.lnf, ws.ln1), ws.full_a, d);  // SP: gathered again
    linear_backward(ws.d_ln, G(layout.lm_head), static_cast<T*>(nullptr), h.probs.data(), in, P(layout.lm_head), N, C,
                    Vl);
    hooks.head_input_backward(ws.d_ln, d);
  }
  std::memset(static_cast<void*>(ws.d_res), 0, R * C * sizeof(T));
  ExactSum* sums = access.exact_sums(unit);  // the exact mode: the final LayerNorm's rows, order-free
  auto X = [&](size_t offset) { return sums ? sums + (offset - layout.unit_begin(unit)) : nullptr; };
  layernorm_backward(ws.d_res, G(layout.lnf_w), G(layout.lnf_b), ws.d_ln, use(h.x, ws.x), P(layout.lnf_w),
                     h.lnf_mean.data(), h.lnf_rstd.data(), static_cast<int>(R), C, d.split, X(layout.lnf_w),
                     X(layout.lnf_b));
  access.params_done(unit, true);
  access.grads_done(unit);
  h = HeadRecord<T>();
}

#define SHARDLAB_HEAD(T)                                                                                         \
  template double head_forward<T>(HeadRecord<T>&, const int32_t*, UnitAccess<T>&, const ParamLayout&,            \
                                  const GPTConfig&, const ModelSlice&, const BlockDims&, bool, BlockScratch<T>&, \
                                  HeadHooks<T>&, MemoryLedger&, ExactSum*);                                      \
  template void head_backward<T>(HeadRecord<T>&, const int32_t*, T, UnitAccess<T>&, const ParamLayout&,          \
                                 const GPTConfig&, const ModelSlice&, const BlockDims&, BlockScratch<T>&,        \
                                 HeadHooks<T>&, MemoryLedger&);
SHARDLAB_HEAD(float)
SHARDLAB_HEAD(double)
#undef SHARDLAB_HEAD

}  // namespace shardlab
