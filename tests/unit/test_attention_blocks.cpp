// Blocked causal attention (several row blocks, the last one partial) against a direct
// triple-loop reference of softmax(QKᵀ/√d)V and its gradients, in f64.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "../common/worst.h"
#include "core/rng.h"
#include "model/attention.h"

using namespace shardlab;

namespace {

struct Ref {
  std::vector<double> out, dqkv;
};

// Direct reference for one batch of B samples: per (b, h), loops only.
Ref reference(const std::vector<double>& qkv, const std::vector<double>& dout, int B, int T, int C, int NH) {
  const int HD = C / NH, C3 = 3 * C;
  Ref r{std::vector<double>(size_t(B) * T * C, 0.0), std::vector<double>(size_t(B) * T * C3, 0.0)};
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h) {
      auto Q = [&](int t, int e) { return qkv[(size_t(b) * T + t) * C3 + h * 3 * HD + e]; };
      auto K = [&](int t, int e) { return qkv[(size_t(b) * T + t) * C3 + h * 3 * HD + HD + e]; };
      auto V = [&](int t, int e) { return qkv[(size_t(b) * T + t) * C3 + h * 3 * HD + 2 * HD + e]; };
      auto dQ = [&](int t, int e) -> double& { return r.dqkv[(size_t(b) * T + t) * C3 + h * 3 * HD + e]; };
      auto dK = [&](int t, int e) -> double& { return r.dqkv[(size_t(b) * T + t) * C3 + h * 3 * HD + HD + e]; };
      auto dV = [&](int t, int e) -> double& { return r.dqkv[(size_t(b) * T + t) * C3 + h * 3 * HD + 2 * HD + e]; };
      for (int i = 0; i < T; ++i) {
        std::vector<double> p(i + 1);
        double mx = -1e300, sum = 0;
        for (int j = 0; j <= i; ++j) {
          double s = 0;
          for (int e = 0; e < HD; ++e) s += Q(i, e) * K(j, e);
          p[j] = s / std::sqrt(double(HD));
          mx = std::max(mx, p[j]);
        }
        for (int j = 0; j <= i; ++j) sum += (p[j] = std::exp(p[j] - mx));
        for (int j = 0; j <= i; ++j) p[j] /= sum;
        const double* go = &dout[(size_t(b) * T + i) * C + h * HD];
        std::vector<double> dp(i + 1, 0.0);
        for (int e = 0; e < HD; ++e)
          for (int j = 0; j <= i; ++j) {
            r.out[(size_t(b) * T + i) * C + h * HD + e] += p[j] * V(j, e);
            dV(j, e) += p[j] * go[e];
            dp[j] += go[e] * V(j, e);
          }
        double dot = 0;
        for (int j = 0; j <= i; ++j) dot += p[j] * dp[j];
        for (int j = 0; j <= i; ++j) {
          double ds = p[j] * (dp[j] - dot) / std::sqrt(double(HD));
          for (int e = 0; e < HD; ++e) {
            dQ(i, e) += ds * K(j, e);
            dK(j, e) += ds * Q(i, e);
          }
        }
      }
    }
  return r;
}

}  // namespace

TEST_CASE("blocked causal attention equals the direct formula across row blocks", "[model]") {
  const int B = 2, T = 2 * kRowBlock + 13, C = 8, NH = 2;
  RngStream rng = rng_stream(5, "attention-blocks");
  std::vector<double> qkv(size_t(B) * T * 3 * C), dout(size_t(B) * T * C);
  for (size_t i = 0; i < qkv.size(); ++i) qkv[i] = rng.normal(i);
  for (size_t i = 0; i < dout.size(); ++i) dout[i] = rng.normal(qkv.size() + i);
  std::vector<double> out(dout.size()), probs(size_t(B) * NH * T * T), dqkv(qkv.size(), 7.0), scratch(2 * T * T);
  Dropout none;
  attention_forward(out.data(), probs.data(), qkv.data(), AttentionDims{B, T, C, NH}, none, scratch.data());
  attention_backward(dqkv.data(), dout.data(), qkv.data(), probs.data(), AttentionDims{B, T, C, NH}, none,
                     scratch.data());
  Ref ref = reference(qkv, dout, B, T, C, NH);
  double worst_out = 0, worst_grad = 0;
  for (size_t i = 0; i < out.size(); ++i) worst_out = test::worst_of(worst_out, std::fabs(out[i] - ref.out[i]));
  for (size_t i = 0; i < dqkv.size(); ++i) worst_grad = test::worst_of(worst_grad, std::fabs(dqkv[i] - ref.dqkv[i]));
  INFO("max |out - ref| " << worst_out << ", max |dqkv - ref| " << worst_grad);
  CHECK(worst_out < 1e-12);
  CHECK(worst_grad < 1e-12);
  for (int i = 0; i < T; ++i)  // probs are exactly zero above the diagonal
    for (int j = i + 1; j < T; ++j) REQUIRE(probs[size_t(i) * T + j] == 0.0);
}
