// The exact mode's linear layer (model/linear_exact.h): a layer cut over ranks the way tensor parallelism cuts it —
// a column-parallel layer's output features, a row-parallel layer's input features — gives the whole layer's bits
// once each rank's order-free sums are merged: the forward outputs, the input gradients and every weight gradient.
// And the exact products agree with the normal linear layer to rounding.
#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <vector>

#include "model/linear_exact.h"

using namespace shardlab;

namespace {

std::vector<double> random_values(size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::normal_distribution<double> d;
  std::vector<double> v(n);
  for (double& x : v) x = d(g);
  return v;
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

// Rows [0, rows) × columns [c0, c0 + w) of a (rows, cols) matrix.
std::vector<double> columns(const std::vector<double>& m, int rows, int cols, int c0, int w) {
  std::vector<double> out(size_t(rows) * w);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < w; ++c) out[size_t(r) * w + c] = m[size_t(r) * cols + c0 + c];
  return out;
}
std::vector<double> rows_of(const std::vector<double>& m, int cols, int r0, int n) {
  return std::vector<double>(m.begin() + size_t(r0) * cols, m.begin() + size_t(r0 + n) * cols);
}

}  // namespace

TEST_CASE("exact linear: a column-parallel layer cut over 2 and 4 ranks gives the whole layer's bits", "[exact]") {
  const int samples = 3, rows = 5, N = samples * rows, IC = 8, OC = 16, chunk = 4;
  const RowSplit split{samples, 0, true};
  const std::vector<double> x = random_values(size_t(N) * IC, 1), w = random_values(size_t(OC) * IC, 2),
                            b = random_values(OC, 3), dy = random_values(size_t(N) * OC, 4);
  // The whole layer.
  std::vector<double> y(size_t(N) * OC), dw(size_t(OC) * IC, 0.0), db(OC, 0.0), d_in(size_t(N) * IC);
  std::vector<ExactSum> sums(size_t(N) * IC);
  std::vector<double> scratch(size_t(rows) * IC * (OC / chunk));
  linear_forward_exact(y.data(), static_cast<ExactSum*>(nullptr), static_cast<double*>(nullptr), x.data(), w.data(),
                       b.data(), N, IC, OC, split, Chunks{chunk, 0});
  linear_backward_exact(static_cast<double*>(nullptr), sums.data(), scratch.data(), dw.data(), db.data(), dy.data(),
                        x.data(), w.data(), N, IC, OC, split, Chunks{chunk, 0});
  exact_round(d_in.data(), sums.data(), sums.size());
  // Against the normal layer: the same values up to rounding.
  std::vector<double> y_normal(y.size());
  linear_forward(y_normal.data(), x.data(), w.data(), b.data(), N, IC, OC);
  for (size_t i = 0; i < y.size(); ++i) CHECK(y[i] == Approx(y_normal[i]).epsilon(1e-13));
  for (int t : {2, 4}) {
    INFO("t = " << t);
    const int OCl = OC / t;
    std::vector<ExactSum> merged(size_t(N) * IC);
    for (int r = 0; r < t; ++r) {  // rank r: output features [r·OC/t, (r+1)·OC/t)
      const std::vector<double> wl = rows_of(w, IC, r * OCl, OCl), bl(b.begin() + r * OCl, b.begin() + (r + 1) * OCl),
                                dyl = columns(dy, N, OC, r * OCl, OCl);
      std::vector<double> yl(size_t(N) * OCl), dwl(size_t(OCl) * IC, 0.0), dbl(OCl, 0.0);
      std::vector<ExactSum> mine(size_t(N) * IC);
      linear_forward_exact(yl.data(), static_cast<ExactSum*>(nullptr), static_cast<double*>(nullptr), x.data(),
                           wl.data(), bl.data(), N, IC, OCl, split, Chunks{chunk, 0});
      linear_backward_exact(static_cast<double*>(nullptr), mine.data(), scratch.data(), dwl.data(), dbl.data(),
                            dyl.data(), x.data(), wl.data(), N, IC, OCl, split, Chunks{chunk, 0});
      CHECK(same_bits(yl, columns(y, N, OC, r * OCl, OCl)));
      CHECK(same_bits(dwl, rows_of(dw, IC, r * OCl, OCl)));
      CHECK(same_bits(dbl, std::vector<double>(db.begin() + r * OCl, db.begin() + (r + 1) * OCl)));
      exact_merge(merged.data(), mine.data(), merged.size());
    }
    std::vector<double> d_in_t(d_in.size());
    exact_round(d_in_t.data(), merged.data(), merged.size());
    CHECK(same_bits(d_in_t, d_in));
  }
}

TEST_CASE("exact linear: a row-parallel layer cut over 2 and 4 ranks gives the whole layer's bits", "[exact]") {
  const int samples = 2, rows = 7, N = samples * rows, IC = 16, OC = 8, chunk = 4;
  const RowSplit split{samples, 0, true};
  const std::vector<double> x = random_values(size_t(N) * IC, 5), w = random_values(size_t(OC) * IC, 6),
                            dy = random_values(size_t(N) * OC, 7);
  std::vector<ExactSum> sums(size_t(N) * OC);
  std::vector<double> scratch(size_t(rows) * OC * (IC / chunk)), y(size_t(N) * OC), dw(size_t(OC) * IC, 0.0),
      d_in(size_t(N) * IC);
  linear_forward_exact(static_cast<double*>(nullptr), sums.data(), scratch.data(), x.data(), w.data(),
                       static_cast<const double*>(nullptr), N, IC, OC, split, Chunks{0, chunk});
  exact_round(y.data(), sums.data(), sums.size());
  linear_backward_exact(d_in.data(), static_cast<ExactSum*>(nullptr), static_cast<double*>(nullptr), dw.data(),
                        static_cast<double*>(nullptr), dy.data(), x.data(), w.data(), N, IC, OC, split,
                        Chunks{0, chunk});
  std::vector<double> y_normal(y.size());
  linear_forward(y_normal.data(), x.data(), w.data(), static_cast<const double*>(nullptr), N, IC, OC);
  for (size_t i = 0; i < y.size(); ++i) CHECK(y[i] == Approx(y_normal[i]).epsilon(1e-13));
  for (int t : {2, 4}) {
    INFO("t = " << t);
    const int ICl = IC / t;
    std::vector<ExactSum> merged(size_t(N) * OC);
    for (int r = 0; r < t; ++r) {  // rank r: input features [r·IC/t, (r+1)·IC/t)
      const std::vector<double> xl = columns(x, N, IC, r * ICl, ICl), wl = columns(w, OC, IC, r * ICl, ICl);
      std::vector<ExactSum> mine(size_t(N) * OC);
      std::vector<double> dwl(size_t(OC) * ICl, 0.0), d_inl(size_t(N) * ICl);
      linear_forward_exact(static_cast<double*>(nullptr), mine.data(), scratch.data(), xl.data(), wl.data(),
                           static_cast<const double*>(nullptr), N, ICl, OC, split, Chunks{0, chunk});
      linear_backward_exact(d_inl.data(), static_cast<ExactSum*>(nullptr), static_cast<double*>(nullptr), dwl.data(),
                            static_cast<double*>(nullptr), dy.data(), xl.data(), wl.data(), N, ICl, OC, split,
                            Chunks{0, chunk});
      CHECK(same_bits(d_inl, columns(d_in, N, IC, r * ICl, ICl)));
      CHECK(same_bits(dwl, columns(dw, OC, IC, r * ICl, ICl)));
      exact_merge(merged.data(), mine.data(), merged.size());
    }
    std::vector<double> y_t(y.size());
    exact_round(y_t.data(), merged.data(), merged.size());
    CHECK(same_bits(y_t, y));
  }
}

TEST_CASE("exact linear: each sample's weight gradient in its own copy", "[exact]") {
  const int samples = 3, rows = 4, N = samples * rows, IC = 6, OC = 8;
  const size_t stride = size_t(OC) * IC + 16;  // a copy per sample, apart by more than a matrix
  const std::vector<double> x = random_values(size_t(N) * IC, 8), w = random_values(size_t(OC) * IC, 9),
                            dy = random_values(size_t(N) * OC, 10);
  std::vector<double> per_sample(stride * samples, 0.0);
  linear_backward_exact(static_cast<double*>(nullptr), static_cast<ExactSum*>(nullptr), static_cast<double*>(nullptr),
                        per_sample.data(), static_cast<double*>(nullptr), dy.data(), x.data(), w.data(), N, IC, OC,
                        RowSplit{samples, stride, true}, Chunks{4, 0});
  for (int g = 0; g < samples; ++g) {  // sample g alone, through the normal layer
    std::vector<double> dw(size_t(OC) * IC, 0.0);
    const std::vector<double> xg = rows_of(x, IC, g * rows, rows), dyg = rows_of(dy, OC, g * rows, rows);
    linear_backward(static_cast<double*>(nullptr), dw.data(), static_cast<double*>(nullptr), dyg.data(), xg.data(),
                    w.data(), rows, IC, OC);
    for (size_t i = 0; i < dw.size(); ++i) CHECK(per_sample[g * stride + i] == Approx(dw[i]).epsilon(1e-13));
  }
}
