// Flash-style attention (model/flash_attention.h) against the naive kernel (model/attention.h, itself
// checked against a triple loop and finite differences): outputs and q/k/v gradients equal to 1e-12 in
// f64, with and without dropout, for lengths below, at and across the block sizes (63, 64, 65, 300, 520:
// several query blocks, several key blocks, partial last blocks); and lse = log Σ exp(S) per row.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "../common/worst.h"
#include "core/rng.h"
#include "model/attention.h"
#include "model/flash_attention.h"

using namespace shardlab;

namespace {

double max_rel(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) scale = test::worst_of(scale, std::fabs(a[i]));
  for (size_t i = 0; i < a.size(); ++i) worst = test::worst_of(worst, std::fabs(a[i] - b[i]) / scale);
  return worst;
}

void flash_vs_naive(int B, int T, int C, int NH, double p) {
  INFO("B " << B << " T " << T << " C " << C << " NH " << NH << " dropout " << p);
  const AttentionDims d{B, T, C, NH};
  const size_t n_qkv = size_t(B) * T * 3 * C, n_out = size_t(B) * T * C;
  std::vector<double> qkv(n_qkv), dout(n_out);
  RngStream r = rng_stream(5, "flash-test");
  for (size_t i = 0; i < n_qkv; ++i) qkv[i] = r.normal(i);
  for (size_t i = 0; i < n_out; ++i) dout[i] = r.normal(n_qkv + i);
  const Dropout drop = Dropout::make(p, 11, "dropout:attn", 3, 1, /*first_sample=*/2, T, C, NH);

  std::vector<double> out_n(n_out), probs(size_t(B) * NH * T * T), scratch(2 * size_t(T) * T), dqkv_n(n_qkv);
  attention_forward(out_n.data(), probs.data(), qkv.data(), d, drop, scratch.data());
  attention_backward(dqkv_n.data(), dout.data(), qkv.data(), probs.data(), d, drop, scratch.data());

  std::vector<double> out_f(n_out), lse(size_t(B) * NH * T), fscratch(flash_scratch_elements()), dqkv_f(n_qkv);
  flash_attention_forward(out_f.data(), lse.data(), qkv.data(), d, drop, fscratch.data());
  flash_attention_backward(dqkv_f.data(), dout.data(), out_f.data(), qkv.data(), lse.data(), d, drop, fscratch.data());

  CHECK(max_rel(out_n, out_f) <= 1e-12);
  CHECK(max_rel(dqkv_n, dqkv_f) <= 1e-12);
  CHECK(max_rel(out_n, out_f) > 0);  // a different order of sums: the comparison is not of a value with itself
  // lse of a few rows against the scores computed directly.
  const int HD = C / NH;
  for (int i : {0, T / 2, T - 1}) {
    double mx = -1e300, sum = 0;
    std::vector<double> s(i + 1);
    for (int j = 0; j <= i; ++j) {
      for (int e = 0; e < HD; ++e) s[j] += qkv[size_t(i) * 3 * C + e] * qkv[size_t(j) * 3 * C + HD + e];
      s[j] /= std::sqrt(double(HD));
      mx = std::max(mx, s[j]);
    }
    for (int j = 0; j <= i; ++j) sum += std::exp(s[j] - mx);
    CHECK(lse[i] == Approx(mx + std::log(sum)).epsilon(1e-13));
  }
}

}  // namespace

TEST_CASE("flash attention equals naive attention to 1e-12 (f64), forward and backward", "[attention][flash]") {
  for (double p : {0.0, 0.2}) {
    flash_vs_naive(2, 63, 16, 2, p);
    flash_vs_naive(1, 64, 16, 2, p);
    flash_vs_naive(2, 65, 24, 3, p);
    flash_vs_naive(1, 300, 16, 2, p);
    flash_vs_naive(1, 520, 8, 1, p);
  }
}
