// Per-layer gradient checks: every forward/backward pair of src/model on its own, backward against
// central finite differences of forward in f64 (h = 1e-5), with the scalar objective L = Σ r ⊙ out
// for a fixed random r (so d_out = r). Relative error ||g - fd|| / max(||g||, ||fd||) ≤ 1e-6 per
// gradient. The buffer conventions are checked too: activation gradients (d_in of linear, gelu,
// attention) are OVERWRITTEN (pre-filled with garbage here), parameter gradients and the layernorm /
// embedding gradients ACCUMULATE (pre-filled with known values, subtracted afterwards).
// Forwards are also checked against naive loops where FD cannot see a mistake (causality, dropout
// mask, softmax stability), and the f32 instantiation against f64 on the same (cast) inputs.
// GCC 12 warns that an AVX-512 store Eigen inlines into layernorm_forward may pass the end of the
// 15-float test vectors; Eigen takes that path only for full 16-float packets (a false positive).
#pragma GCC diagnostic ignored "-Warray-bounds"
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/rng.h"
#include "model/attention.h"
#include "model/cross_entropy.h"
#include "model/dropout.h"
#include "model/embedding.h"
#include "model/gelu.h"
#include "model/layernorm.h"
#include "model/linear.h"

using namespace shardlab;

namespace {

using Vec = std::vector<double>;
using VecF = std::vector<float>;

constexpr double kFdStep = 1e-5;
constexpr double kGradTol = 1e-6;
constexpr double kF32Tol = 1e-5;

Vec randn(size_t n, uint64_t tag, double scale = 1.0, double shift = 0.0) {
  RngStream r = rng_stream(2024, "test:layer_grads", tag);
  Vec v(n);
  for (size_t i = 0; i < n; ++i) v[i] = shift + scale * r.normal(i);
  return v;
}

VecF to_f32(const Vec& v) { return VecF(v.begin(), v.end()); }

double norm(const Vec& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}

// ||a - b|| / max(||a||, ||b||)
template <class A, class B>
double rel_err(const A& a, const B& b) {
  if (a.size() != b.size()) FAIL("size mismatch " << a.size() << " vs " << b.size());
  double num = 0, na = 0, nb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double x = static_cast<double>(a[i]), y = static_cast<double>(b[i]);
    num += (x - y) * (x - y);
    na += x * x;
    nb += y * y;
  }
  return std::sqrt(num) / std::max(1e-300, std::max(std::sqrt(na), std::sqrt(nb)));
}

double dot(const Vec& r, const Vec& out) {
  if (r.size() != out.size()) FAIL("size mismatch " << r.size() << " vs " << out.size());
  double s = 0;
  for (size_t i = 0; i < r.size(); ++i) s += r[i] * out[i];
  return s;
}

// Central finite differences of the scalar objective f() w.r.t. every element of x (restored after).
template <class F>
Vec fd_grad(Vec& x, F f) {
  Vec g(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double keep = x[i];
    x[i] = keep + kFdStep;
    const double lp = f();
    x[i] = keep - kFdStep;
    const double lm = f();
    x[i] = keep;
    g[i] = (lp - lm) / (2 * kFdStep);
  }
  return g;
}

void check_grad(const std::string& what, const Vec& g, const Vec& fd) {
  const double rel = rel_err(g, fd);
  INFO(what << ": rel err " << rel << "  ||g|| " << norm(g) << "  ||fd|| " << norm(fd));
  CHECK(rel <= kGradTol);
  CHECK(norm(fd) > 1e-3);  // the gradient is not trivially zero
}

Vec minus(const Vec& a, const Vec& b) {
  Vec d(a.size());
  for (size_t i = 0; i < a.size(); ++i) d[i] = a[i] - b[i];
  return d;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
TEST_CASE("linear backward matches finite differences", "[grad]") {
  const int N = 3, IC = 5, OC = 7;
  Vec in = randn(N * IC, 1), w = randn(OC * IC, 2), b = randn(OC, 3), r = randn(N * OC, 4);
  auto objective = [&]() {
    Vec out(N * OC);
    linear_forward(out.data(), in.data(), w.data(), b.data(), N, IC, OC);
    return dot(r, out);
  };

  Vec d_in(N * IC, 123.0);  // garbage: must be overwritten
  const Vec w0 = randn(OC * IC, 5), b0 = randn(OC, 6);
  Vec d_w = w0, d_b = b0;  // must accumulate
  linear_backward(d_in.data(), d_w.data(), d_b.data(), r.data(), in.data(), w.data(), N, IC, OC);

  check_grad("linear d_in", d_in, fd_grad(in, objective));
  check_grad("linear d_w", minus(d_w, w0), fd_grad(w, objective));
  check_grad("linear d_b", minus(d_b, b0), fd_grad(b, objective));

  SECTION("null d_in / d_b and null bias") {
    Vec d_w2(OC * IC, 0.0);
    linear_backward(static_cast<double*>(nullptr), d_w2.data(), static_cast<double*>(nullptr), r.data(), in.data(),
                    w.data(), N, IC, OC);
    CHECK(rel_err(d_w2, minus(d_w, w0)) <= 1e-14);
    Vec out_nb(N * OC), out_zb(N * OC);
    Vec zeros(OC, 0.0);
    linear_forward(out_nb.data(), in.data(), w.data(), static_cast<const double*>(nullptr), N, IC, OC);
    linear_forward(out_zb.data(), in.data(), w.data(), zeros.data(), N, IC, OC);
    CHECK(rel_err(out_nb, out_zb) == 0.0);
  }

  SECTION("forward against a naive loop, f32 against f64") {
    Vec out(N * OC), ref(N * OC);
    linear_forward(out.data(), in.data(), w.data(), b.data(), N, IC, OC);
    for (int n = 0; n < N; ++n)
      for (int o = 0; o < OC; ++o) {
        double s = b[o];
        for (int i = 0; i < IC; ++i) s += in[n * IC + i] * w[o * IC + i];
        ref[n * OC + o] = s;
      }
    CHECK(rel_err(out, ref) <= 1e-14);
    VecF inf = to_f32(in), wf = to_f32(w), bf = to_f32(b), outf(N * OC);
    linear_forward(outf.data(), inf.data(), wf.data(), bf.data(), N, IC, OC);
    CHECK(rel_err(outf, out) <= kF32Tol);
  }
}

// ---------------------------------------------------------------------------------------------
TEST_CASE("layernorm backward matches finite differences", "[grad]") {
  const int N = 3, C = 5;
  Vec in = randn(N * C, 11, 1.5, 0.7), w = randn(C, 12, 0.3, 1.0), b = randn(C, 13), r = randn(N * C, 14);
  auto objective = [&]() {
    Vec out(N * C), mean(N), rstd(N);
    layernorm_forward(out.data(), mean.data(), rstd.data(), in.data(), w.data(), b.data(), N, C);
    return dot(r, out);
  };

  Vec out(N * C), mean(N), rstd(N);
  layernorm_forward(out.data(), mean.data(), rstd.data(), in.data(), w.data(), b.data(), N, C);
  const Vec in0 = randn(N * C, 15), w0 = randn(C, 16), b0 = randn(C, 17);
  Vec d_in = in0, d_w = w0, d_b = b0;  // all three accumulate
  layernorm_backward(d_in.data(), d_w.data(), d_b.data(), r.data(), in.data(), w.data(), mean.data(), rstd.data(), N,
                     C);

  check_grad("layernorm d_in", minus(d_in, in0), fd_grad(in, objective));
  check_grad("layernorm d_w", minus(d_w, w0), fd_grad(w, objective));
  check_grad("layernorm d_b", minus(d_b, b0), fd_grad(b, objective));

  SECTION("forward against a naive loop (biased variance, eps 1e-5), f32 against f64") {
    for (int n = 0; n < N; ++n) {
      double m = 0, v = 0;
      for (int i = 0; i < C; ++i) m += in[n * C + i] / C;
      for (int i = 0; i < C; ++i) v += (in[n * C + i] - m) * (in[n * C + i] - m) / C;
      const double s = 1.0 / std::sqrt(v + 1e-5);
      CHECK(mean[n] == Approx(m).epsilon(1e-14));
      CHECK(rstd[n] == Approx(s).epsilon(1e-14));
      for (int i = 0; i < C; ++i) CHECK(out[n * C + i] == Approx((in[n * C + i] - m) * s * w[i] + b[i]).epsilon(1e-13));
    }
    VecF inf = to_f32(in), wf = to_f32(w), bf = to_f32(b), outf(N * C), meanf(N), rstdf(N);
    layernorm_forward(outf.data(), meanf.data(), rstdf.data(), inf.data(), wf.data(), bf.data(), N, C);
    CHECK(rel_err(outf, out) <= kF32Tol);
    CHECK(rel_err(meanf, mean) <= kF32Tol);
    CHECK(rel_err(rstdf, rstd) <= kF32Tol);
  }
}

// ---------------------------------------------------------------------------------------------
TEST_CASE("gelu backward matches finite differences", "[grad]") {
  const size_t n = 15;
  Vec in = randn(n, 21, 2.0), r = randn(n, 22);
  auto objective = [&]() {
    Vec out(n);
    gelu_forward(out.data(), in.data(), n);
    return dot(r, out);
  };
  Vec d_in(n, -77.0);  // garbage: must be overwritten
  gelu_backward(d_in.data(), r.data(), in.data(), n);
  check_grad("gelu d_in", d_in, fd_grad(in, objective));

  SECTION("forward against the scalar tanh formula, f32 against f64") {
    Vec out(n);
    gelu_forward(out.data(), in.data(), n);
    for (size_t i = 0; i < n; ++i) {
      const double x = in[i];
      const double ref = 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
      CHECK(out[i] == Approx(ref).epsilon(1e-13).margin(1e-15));
    }
    VecF inf = to_f32(in), outf(n);
    gelu_forward(outf.data(), inf.data(), n);
    CHECK(rel_err(outf, out) <= kF32Tol);
  }
}

// ---------------------------------------------------------------------------------------------
namespace {

// Naive causal attention with the same dropout mask convention, as an independent reference.
void attention_reference(Vec& out, Vec& probs, const Vec& qkv, AttentionDims d, const Dropout& drop) {
  const int T = d.T, C = d.C, HD = d.HD(), C3 = 3 * C;
  out.assign(static_cast<size_t>(d.B) * T * C, 0.0);
  probs.assign(static_cast<size_t>(d.B) * d.NH * T * T, 0.0);
  for (int b = 0; b < d.B; ++b)
    for (int h = 0; h < d.NH; ++h) {
      auto q = [&](int t, int i) { return qkv[(b * T + t) * C3 + h * 3 * HD + i]; };
      auto k = [&](int t, int i) { return qkv[(b * T + t) * C3 + h * 3 * HD + HD + i]; };
      auto v = [&](int t, int i) { return qkv[(b * T + t) * C3 + h * 3 * HD + 2 * HD + i]; };
      for (int i = 0; i < T; ++i) {
        Vec s(i + 1);
        double mx = -1e300, sum = 0;
        for (int j = 0; j <= i; ++j) {
          double dotp = 0;
          for (int e = 0; e < HD; ++e) dotp += q(i, e) * k(j, e);
          s[j] = dotp / std::sqrt(double(HD));
          mx = std::max(mx, s[j]);
        }
        for (int j = 0; j <= i; ++j) sum += std::exp(s[j] - mx);
        for (int j = 0; j <= i; ++j) {
          const double p = std::exp(s[j] - mx) / sum;
          probs[((static_cast<size_t>(b) * d.NH + h) * T + i) * T + j] = p;
          double pd = p;
          if (drop.active()) {
            const bool dropped = drop.rng.uniform(drop.attention_index(b, h, static_cast<size_t>(i) * T + j)) < drop.p;
            pd = dropped ? 0.0 : p / (1.0 - drop.p);
          }
          for (int e = 0; e < HD; ++e) out[(b * T + i) * C + h * HD + e] += pd * v(j, e);
        }
      }
    }
}

void attention_case(double p, AttentionDims d) {
  const int B = d.B, T = d.T, C = d.C, NH = d.NH;
  const size_t nqkv = static_cast<size_t>(B) * T * 3 * C, nout = static_cast<size_t>(B) * T * C;
  const size_t nprobs = static_cast<size_t>(B) * NH * T * T;
  const Dropout drop = Dropout::make(p, 9, "dropout:attn", 5, 1, /*first_sample=*/3, T, C, NH);
  REQUIRE(drop.active() == (p > 0));
  Vec qkv = randn(nqkv, 31, 1.2), r = randn(nout, 32);
  auto objective = [&]() {
    Vec out(nout), probs(nprobs), scratch(static_cast<size_t>(T) * T);
    attention_forward(out.data(), probs.data(), qkv.data(), d, drop, scratch.data());
    return dot(r, out);
  };

  Vec out(nout), probs(nprobs), scratch(2 * static_cast<size_t>(T) * T);
  attention_forward(out.data(), probs.data(), qkv.data(), d, drop, scratch.data());
  Vec d_qkv(nqkv, 55.0);  // garbage: must be overwritten
  attention_backward(d_qkv.data(), r.data(), qkv.data(), probs.data(), d, drop, scratch.data());
  check_grad(p > 0 ? "attention d_qkv (dropout)" : "attention d_qkv", d_qkv, fd_grad(qkv, objective));

  // Forward against the naive reference: causal mask, softmax, dropout mask and scaling, head layout.
  Vec out_ref, probs_ref;
  attention_reference(out_ref, probs_ref, qkv, d, drop);
  CHECK(rel_err(out, out_ref) <= 1e-13);
  CHECK(rel_err(probs, probs_ref) <= 1e-13);
  bool upper_zero = true;
  for (int bh = 0; bh < B * NH; ++bh)
    for (int i = 0; i < T; ++i)
      for (int j = i + 1; j < T; ++j)
        upper_zero = upper_zero && probs[(static_cast<size_t>(bh) * T + i) * T + j] == 0.0;
  CHECK(upper_zero);  // probs are kept zero above the diagonal

  if (p > 0) {  // dropout really dropped something, and changed the output
    int dropped = 0;
    for (int b = 0; b < B; ++b)
      for (int h = 0; h < NH; ++h)
        for (int i = 0; i < T; ++i)
          for (int j = 0; j <= i; ++j)
            dropped += drop.rng.uniform(drop.attention_index(b, h, static_cast<size_t>(i) * T + j)) < p;
    CHECK(dropped > 0);
    Vec out_nodrop(nout), probs2(nprobs);
    attention_forward(out_nodrop.data(), probs2.data(), qkv.data(), d, Dropout{}, scratch.data());
    CHECK(rel_err(out_nodrop, out) > 1e-3);
  }

  // f32 instantiation against f64.
  VecF qkvf = to_f32(qkv), outf(nout), probsf(nprobs), scratchf(static_cast<size_t>(T) * T);
  attention_forward(outf.data(), probsf.data(), qkvf.data(), d, drop, scratchf.data());
  CHECK(rel_err(outf, out) <= kF32Tol);
  CHECK(rel_err(probsf, probs) <= kF32Tol);
}

}  // namespace

TEST_CASE("attention backward matches finite differences", "[grad]") { attention_case(0.0, {2, 4, 6, 2}); }

TEST_CASE("attention backward matches finite differences with dropout", "[grad]") { attention_case(0.3, {2, 4, 6, 2}); }

// A long odd sequence, so any row/column blocking of the T×T work has several (ragged) blocks.
TEST_CASE("attention backward matches finite differences, long sequence", "[grad]") {
  attention_case(0.0, {1, 67, 6, 2});
  attention_case(0.3, {1, 67, 6, 2});
}

// ---------------------------------------------------------------------------------------------
TEST_CASE("embedding backward matches finite differences (repeated tokens)", "[grad]") {
  const int B = 2, T = 4, C = 5, V = 4;
  const std::vector<int32_t> tokens = {0, 2, 2, 1, 2, 0, 0, 2};  // token 2 five times, 3 never
  Vec tok = randn(V * C, 41), pos = randn(T * C, 42), r = randn(B * T * C, 43);
  auto objective = [&]() {
    Vec out(B * T * C);
    embedding_forward(out.data(), tokens.data(), tok.data(), pos.data(), B, T, C);
    return dot(r, out);
  };
  const Vec tok0 = randn(V * C, 44), pos0 = randn(T * C, 45);
  Vec d_tok = tok0, d_pos = pos0;  // accumulate
  embedding_backward(d_tok.data(), d_pos.data(), r.data(), tokens.data(), B, T, C);
  const Vec g_tok = minus(d_tok, tok0);
  check_grad("embedding d_tok_emb", g_tok, fd_grad(tok, objective));
  check_grad("embedding d_pos_emb", minus(d_pos, pos0), fd_grad(pos, objective));
  for (int i = 0; i < C; ++i) CHECK(g_tok[3 * C + i] == 0.0);  // unused token: no gradient

  SECTION("f32 against f64") {
    Vec out(B * T * C);
    embedding_forward(out.data(), tokens.data(), tok.data(), pos.data(), B, T, C);
    VecF tokf = to_f32(tok), posf = to_f32(pos), outf(B * T * C);
    embedding_forward(outf.data(), tokens.data(), tokf.data(), posf.data(), B, T, C);
    CHECK(rel_err(outf, out) <= kF32Tol);
  }
}

// ---------------------------------------------------------------------------------------------
TEST_CASE("cross-entropy backward matches finite differences", "[grad]") {
  const int N = 3, V = 7;
  const std::vector<int32_t> targets = {3, 0, 6};
  const double scale = 0.37;  // deliberately not 1/N: the scale passed in is the one applied
  Vec logits = randn(N * V, 51, 2.0);
  auto objective = [&]() {
    Vec work = logits;  // forward overwrites logits with probs
    return scale * cross_entropy_forward(work.data(), targets.data(), N, V);
  };

  Vec probs = logits;
  const double loss = cross_entropy_forward(probs.data(), targets.data(), N, V);
  Vec d_logits = probs;
  cross_entropy_backward(d_logits.data(), targets.data(), N, V, scale);
  check_grad("cross_entropy d_logits", d_logits, fd_grad(logits, objective));

  SECTION("forward against log-sum-exp; probabilities; shift invariance; f32 against f64") {
    double ref = 0;
    for (int n = 0; n < N; ++n) {
      double sum = 0, psum = 0;
      for (int v = 0; v < V; ++v) sum += std::exp(logits[n * V + v]);
      ref += std::log(sum) - logits[n * V + targets[n]];
      for (int v = 0; v < V; ++v) {
        CHECK(probs[n * V + v] == Approx(std::exp(logits[n * V + v]) / sum).epsilon(1e-13));
        psum += probs[n * V + v];
      }
      CHECK(psum == Approx(1.0).epsilon(1e-14));
    }
    CHECK(loss == Approx(ref).epsilon(1e-13));

    Vec shifted = logits;  // a naive exp would overflow here
    for (double& x : shifted) x += 1000.0;
    const double loss_shifted = cross_entropy_forward(shifted.data(), targets.data(), N, V);
    CHECK(std::isfinite(loss_shifted));
    CHECK(loss_shifted == Approx(loss).epsilon(1e-10));

    VecF lf = to_f32(logits);
    const double lossf = cross_entropy_forward(lf.data(), targets.data(), N, V);
    CHECK(lossf == Approx(loss).epsilon(kF32Tol));
    CHECK(rel_err(lf, probs) <= kF32Tol);
  }
}
