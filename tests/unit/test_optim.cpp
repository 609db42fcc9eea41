// AdamW's first two steps against values worked out by hand from its definition (optim/adamw.h), for one
// weight, in f64:
//   step 1 (g = 0.5): m = 0.1·0.5 = 0.05, v = 0.05·0.25 = 0.0125; the bias corrections 1/(1−0.9) and
//     1/(1−0.95) give m̂ = 0.5 = g and v̂ = 0.25 = g², so the step is lr·g/(|g| + eps) = lr·sign(g) (less eps):
//     w = 1 − 0.1·0.5/(0.5 + 1e-8);
//   step 2 (g = −0.25): m = 0.9·0.05 − 0.025 = 0.02, v = 0.95·0.0125 + 0.05·0.0625 = 0.015,
//     m̂ = 0.02/(1 − 0.81) = 2/19, v̂ = 0.015/(1 − 0.9025) = 2/13, w −= 0.1·(2/19)/(√(2/13) + eps);
// and decoupled weight decay (w −= lr·wd·w, the weight before the step) and the clipping factor (g·s). A
// missing bias correction, a step count off by one or decay applied to the gradient each fail here.
#include <catch2/catch.hpp>

#include <cmath>

#include "optim/adamw.h"

using namespace shardlab;

namespace {
const AdamWParams kP{0.1, 0.9, 0.95, 1e-8};
}

TEST_CASE("AdamW: the first two steps of one weight, as worked out by hand", "[optim]") {
  double w = 1.0, m = 0.0, v = 0.0;
  const double g1 = 0.5, g2 = -0.25;
  adamw_update(&w, &g1, &m, &v, 1, kP, 0.0, 1, 1.0);
  CHECK(m == Approx(0.05).epsilon(1e-15));
  CHECK(v == Approx(0.0125).epsilon(1e-15));
  const double w1 = 1.0 - 0.1 * 0.5 / (0.5 + 1e-8);
  CHECK(w == Approx(w1).epsilon(1e-15));
  CHECK(std::fabs((1.0 - w) - 0.1) < 1e-8);  // the first step is lr·sign(g): Adam's scale invariance
  adamw_update(&w, &g2, &m, &v, 1, kP, 0.0, 2, 1.0);
  CHECK(m == Approx(0.02).epsilon(1e-14));
  CHECK(v == Approx(0.015).epsilon(1e-14));
  const double w2 = w1 - 0.1 * (2.0 / 19.0) / (std::sqrt(2.0 / 13.0) + 1e-8);
  CHECK(w == Approx(w2).epsilon(1e-14));
  CHECK(w == Approx(0.87316306).epsilon(1e-8));  // 0.900000002 − 0.1·(2/19)/√(2/13), to eight digits
}

TEST_CASE("AdamW: decoupled weight decay shrinks the weight, the clipping factor scales the gradient", "[optim]") {
  {
    double w = 2.0, m = 0.0, v = 0.0;
    const double g = -0.3;
    adamw_update(&w, &g, &m, &v, 1, kP, 0.1, 1, 1.0);
    // lr·(m̂/(√v̂ + eps) + wd·w) = 0.1·(−0.3/(0.3 + 1e-8) + 0.1·2)
    CHECK(w == Approx(2.0 - 0.1 * (-0.3 / (0.3 + 1e-8) + 0.1 * 2.0)).epsilon(1e-15));
  }
  {
    double w = 1.0, m = 0.0, v = 0.0, w_ref = 1.0, m_ref = 0.0, v_ref = 0.0;
    const double g = 0.8, g_scaled = 0.8 * 0.25;
    adamw_update(&w, &g, &m, &v, 1, kP, 0.0, 1, 0.25);                    // clipped to a quarter here …
    adamw_update(&w_ref, &g_scaled, &m_ref, &v_ref, 1, kP, 0.0, 1, 1.0);  // … or before
    CHECK(m == m_ref);
    CHECK(v == v_ref);
    CHECK(w == w_ref);
    CHECK(m == Approx(0.1 * 0.2).epsilon(1e-15));
  }
}

TEST_CASE("AdamW: many elements at once update each as alone", "[optim]") {
  double w[3] = {1.0, -2.0, 0.5}, m[3] = {}, v[3] = {};
  const double g[3] = {0.5, 0.1, -1.0};
  adamw_update(w, g, m, v, 3, kP, 0.0, 1, 1.0);
  for (int i = 0; i < 3; ++i) {
    double wi = (i == 0 ? 1.0 : i == 1 ? -2.0 : 0.5), mi = 0, vi = 0;
    adamw_update(&wi, &g[i], &mi, &vi, 1, kP, 0.0, 1, 1.0);
    CHECK(w[i] == wi);
    CHECK(std::isfinite(w[i]));
  }
}
