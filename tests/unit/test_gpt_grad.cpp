// Whole-model gradient check: backward against central finite differences of forward, in f64,
// with and without dropout (masks are a pure function of the counters, so the loss is smooth in
// the weights). Relative error per tensor ||g - fd|| / max(||g||, ||fd||) must be ≤ 1e-6.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "../common/worst.h"
#include "core/rng.h"
#include "model/gpt.h"

using namespace shardlab;

namespace {

// moe: two of the blocks' MLPs become 4 experts, top-2, with both router losses and (capacity) drops.
double model_rel_error(double dropout, bool moe = false, double capacity = 0) {
  GPTConfig cfg;
  cfg.layers = 2;
  cfg.hidden = 8;
  cfg.heads = 2;
  cfg.seq = 5;
  cfg.vocab = 11;
  cfg.dropout = dropout;
  if (moe) cfg.moe = MoeConfig{4, 2, 1, 6, capacity, 0.3, 0.2};
  ParamLayout layout(cfg);
  MemoryLedger ledger;
  const int B = 2, N = B * cfg.seq;
  GPT<double> model(cfg, layout, B, ledger);
  std::vector<double> P(layout.total()), G(layout.total(), 0.0);
  init_params(layout, cfg, 7, P.data(), 0, P.size());
  RngStream r = rng_stream(3, "test");
  for (size_t i = 0; i < P.size(); ++i) P[i] += 0.3 * r.normal(1000 + i);  // move off the symmetric init
  std::vector<int32_t> in(N), tg(N);
  for (int i = 0; i < N; ++i) {
    in[i] = int(r.below(i, cfg.vocab));
    tg[i] = int(r.below(100 + i, cfg.vocab));
  }
  DropoutContext dc{11, 4, 2};
  const double scale = 1.0 / N;
  // The objective: the mean token loss plus the router losses, weighted as training weights them (model_chunk.h).
  auto loss = [&]() {
    const double ce = model.forward(P.data(), in.data(), tg.data(), true, dc) * scale;
    const MoeStats s = model.chunk().take_moe_stats();
    return ce + cfg.moe.aux_loss * cfg.seq * scale * s.aux + cfg.moe.z_loss * scale * s.z;
  };
  loss();
  model.backward(G.data(), P.data(), scale);
  double worst = 0.0;
  for (const TensorSpec& t : layout.tensors()) {
    double num = 0, den_g = 0, den_fd = 0;
    for (size_t i = t.offset; i < t.offset + t.numel; ++i) {
      const double h = 1e-5, keep = P[i];
      P[i] = keep + h;
      double lp = loss();
      P[i] = keep - h;
      double lm = loss();
      P[i] = keep;
      double fd = (lp - lm) / (2 * h);
      num += (G[i] - fd) * (G[i] - fd);
      den_g += G[i] * G[i];
      den_fd += fd * fd;
    }
    double rel = std::sqrt(num) / std::max(1e-30, std::max(std::sqrt(den_g), std::sqrt(den_fd)));
    INFO(t.name << " rel err " << rel);
    CHECK(rel <= 1e-6);
    CHECK(std::sqrt(den_g) > 0);  // every tensor gets a gradient
    worst = test::worst_of(worst, rel);
  }
  return worst;
}

}  // namespace

TEST_CASE("GPT backward matches finite differences (f64)", "[grad]") { CHECK(model_rel_error(0.0) <= 1e-6); }

TEST_CASE("GPT backward matches finite differences with dropout (f64)", "[grad]") {
  CHECK(model_rel_error(0.25) <= 1e-6);
}

TEST_CASE("GPT with experts: backward matches finite differences, router losses and drops included (f64)",
          "[grad][moe]") {
  CHECK(model_rel_error(0.0, true) <= 1e-6);
  CHECK(model_rel_error(0.25, true, 0.6) <= 1e-6);
}
