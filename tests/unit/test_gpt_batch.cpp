// Loss normalisation under gradient accumulation (DESIGN.md "Loss normalisation"), in f64:
// one forward/backward of a 4-sample micro-batch with scale 1/(4·T) equals four single-sample
// forwards/backwards with the same scale 1/(4·T) accumulating into one gradient buffer — loss and
// every gradient tensor to 1e-12 relative — with and without dropout. With dropout the k-th single
// sample passes DropoutContext.first_sample = k, so it draws the masks of global sample k.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "../common/worst.h"
#include "core/rng.h"
#include "model/gpt.h"

using namespace shardlab;

namespace {

struct BatchResult {
  double loss;
  std::vector<double> grads;
};

struct Setup {
  GPTConfig cfg;
  ParamLayout layout;
  std::vector<double> params;
  std::vector<int32_t> inputs, targets;  // (4, T)
  static constexpr int kSamples = 4;

  explicit Setup(double dropout) : cfg(make_cfg(dropout)), layout(cfg), params(layout.total()) {
    init_params(layout, cfg, 5, params.data(), 0, params.size());
    RngStream r = rng_stream(17, "test:gpt_batch");
    for (size_t i = 0; i < params.size(); ++i) params[i] += 0.2 * r.normal(500 + i);  // off the symmetric init
    const int N = kSamples * cfg.seq;
    inputs.resize(N);
    targets.resize(N);
    for (int i = 0; i < N; ++i) {
      inputs[i] = int(r.below(i, cfg.vocab));
      targets[i] = int(r.below(1000 + i, cfg.vocab));
    }
  }
  static GPTConfig make_cfg(double dropout) {
    GPTConfig c;
    c.layers = 2;
    c.hidden = 8;
    c.heads = 2;
    c.seq = 5;
    c.vocab = 11;
    c.dropout = dropout;
    return c;
  }
  double scale() const { return 1.0 / (kSamples * cfg.seq); }

  // One micro-batch of all 4 samples.
  BatchResult full(uint64_t seed, uint64_t step) const {
    MemoryLedger ledger;
    GPT<double> model(cfg, layout, kSamples, ledger);
    BatchResult r{0.0, std::vector<double>(layout.total(), 0.0)};
    r.loss = model.forward(params.data(), inputs.data(), targets.data(), true, DropoutContext{seed, step, 0}) * scale();
    model.backward(r.grads.data(), params.data(), scale());
    return r;
  }
  // Four micro-batches of one sample; first_sample(k) says which global sample the k-th claims to be.
  template <class F>
  BatchResult split(uint64_t seed, uint64_t step, F first_sample) const {
    MemoryLedger ledger;
    GPT<double> model(cfg, layout, 1, ledger);
    BatchResult r{0.0, std::vector<double>(layout.total(), 0.0)};
    for (int k = 0; k < kSamples; ++k) {
      const size_t off = static_cast<size_t>(k) * cfg.seq;
      r.loss += model.forward(params.data(), inputs.data() + off, targets.data() + off, true,
                              DropoutContext{seed, step, static_cast<uint64_t>(first_sample(k))}) *
                scale();
      model.backward(r.grads.data(), params.data(), scale());
    }
    return r;
  }
};

double rel(const double* a, const double* b, size_t n) {
  double num = 0, na = 0, nb = 0;
  for (size_t i = 0; i < n; ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return std::sqrt(num) / std::max(1e-300, std::max(std::sqrt(na), std::sqrt(nb)));
}

// Loss and every tensor's gradient agree to tol; returns the worst relative difference seen.
double compare(const Setup& s, const BatchResult& a, const BatchResult& b, double tol) {
  const double loss_rel = std::fabs(a.loss - b.loss) / std::max(std::fabs(a.loss), std::fabs(b.loss));
  INFO("loss " << a.loss << " vs " << b.loss << " rel " << loss_rel);
  CHECK(loss_rel <= tol);
  double worst = loss_rel;
  for (const TensorSpec& t : s.layout.tensors()) {
    const double r = rel(a.grads.data() + t.offset, b.grads.data() + t.offset, t.numel);
    INFO(t.name << " grad rel " << r);
    CHECK(r <= tol);
    worst = test::worst_of(worst, r);
  }
  const double all = rel(a.grads.data(), b.grads.data(), a.grads.size());
  CHECK(all <= tol);
  return test::worst_of(worst, all);
}

double grad_norm(const BatchResult& r) {
  double s = 0;
  for (double g : r.grads) s += g * g;
  return std::sqrt(s);
}

}  // namespace

TEST_CASE("gradient accumulation over micro-batches equals one big batch (f64)", "[model]") {
  const Setup s(0.0);
  const BatchResult one = s.full(3, 0);
  const BatchResult four = s.split(3, 0, [](int k) { return k; });
  REQUIRE(std::isfinite(one.loss));
  CHECK(one.loss > 1.0);         // ~log(11) for a near-random model: a real loss, not zero
  CHECK(grad_norm(one) > 1e-3);  // and real gradients
  compare(s, one, four, 1e-12);

  // Sensitivity: a per-micro-batch mean (scale 1/T instead of 1/(4·T)) would be 4× off.
  BatchResult four_x4 = four;
  for (double& g : four_x4.grads) g *= 4;
  CHECK(rel(one.grads.data(), four_x4.grads.data(), one.grads.size()) > 0.5);
}

TEST_CASE("gradient accumulation over micro-batches equals one big batch with dropout (f64)", "[model]") {
  const Setup s(0.2);
  const uint64_t seed = 21, step = 6;
  const BatchResult one = s.full(seed, step);
  const BatchResult four = s.split(seed, step, [](int k) { return k; });
  CHECK(grad_norm(one) > 1e-3);
  compare(s, one, four, 1e-12);

  // The dropout is real: the same batch without it (train = eval) gives a different loss ...
  const Setup s0(0.0);
  const BatchResult nodrop = s0.full(seed, step);
  CHECK(std::fabs(nodrop.loss - one.loss) > 1e-6 * std::fabs(one.loss));
  // ... and micro-batches that all claim to be sample 0 see different masks, so they do NOT match.
  const BatchResult wrong = s.split(seed, step, [](int) { return 0; });
  CHECK(rel(one.grads.data(), wrong.grads.data(), one.grads.size()) > 1e-6);
  // Another step draws other masks.
  const BatchResult other_step = s.full(seed, step + 1);
  CHECK(std::fabs(other_step.loss - one.loss) > 1e-9);
}
