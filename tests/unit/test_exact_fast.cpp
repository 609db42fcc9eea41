// ExactSum's fast paths (core/exact_sum.h) against their plain forms, bit for bit: the rounding (exact_value,
// exact_value_float, exact_round) against exact_value_reference on random and adversarial bins (ties, carries
// between the bins, a low word of 0 under a negative value, the subnormal and overflow ends, empty and NaN sums);
// the array exact_merge and the ring's ExactSum kernel (aligned and unaligned buffers) against exact_merge one
// pair at a time; exact_add_rows with many rows against one-by-one deposits; exact_add_squares against one square
// at a time; the exact LayerNorm and bias backward (their rows batched) against their rows added one by one.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "comm/mpi_handle.h"
#include "core/exact_sum.h"
#include "model/layernorm.h"
#include "model/linear_exact.h"

using namespace shardlab;

namespace {

template <class T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// The sum whose bins hold v = hi·2^64 + lo (in 32-bit pieces), with `carry` moved from each bin into the one
// above (the same value, other bins): every representation of a value must round alike.
ExactSum with_value(int32_t top, __int128 v, int64_t carry) {
  ExactSum s;
  s.top = top;
  s.terms = 3;
  const __int128 b2 = v % (static_cast<__int128>(1) << 32);
  const __int128 rest = (v - b2) / (static_cast<__int128>(1) << 32);
  const __int128 b1 = rest % (static_cast<__int128>(1) << 32);
  const __int128 b0 = (rest - b1) / (static_cast<__int128>(1) << 32);
  s.bin[0] = static_cast<int64_t>(b0) + carry;
  s.bin[1] = static_cast<int64_t>(b1) - carry * (int64_t(1) << 32) + carry;
  s.bin[2] = static_cast<int64_t>(b2) - carry * (int64_t(1) << 32);
  return s;
}

// Mismatches of the rounding fast paths against the reference over `sums`.
size_t rounding_mismatches(const std::vector<ExactSum>& sums) {
  std::vector<double> d(sums.size());
  std::vector<float> f(sums.size());
  exact_round(d.data(), sums.data(), sums.size());
  exact_round(f.data(), sums.data(), sums.size());
  size_t bad = 0;
  for (size_t i = 0; i < sums.size(); ++i) {
    const double rd = exact_value_reference<double>(sums[i]);
    const float rf = exact_value_reference<float>(sums[i]);
    bad += !same_bits(d[i], rd) + !same_bits(f[i], rf) + !same_bits(exact_value(sums[i]), rd) +
           !same_bits(exact_value_float(sums[i]), rf);
  }
  return bad;
}

}  // namespace

TEST_CASE("ExactSum fast paths: the rounding equals the reference on random and adversarial bins", "[exact]") {
  std::mt19937_64 g(2024);
  std::vector<ExactSum> sums;
  const int32_t tops[] = {0, 1, 2, 3, 4, 30, 31, 32, 33, 34, 35, 36, 60, 61, 62, 63, 64, 65};
  const int64_t carries[] = {0, 1, -1, 12345, -(int64_t(1) << 29)};
  // Random bins anywhere below 2^62, every top.
  for (int k = 0; k < 20000; ++k) {
    ExactSum s;
    s.top = static_cast<int32_t>(g() % 66);
    s.terms = 1;
    for (int64_t& b : s.bin) {
      const int bits = 1 + static_cast<int>(g() % 62);
      b = static_cast<int64_t>(g() >> (64 - bits)) * ((g() & 1) ? 1 : -1);
      if (g() % 5 == 0) b = 0;
    }
    sums.push_back(s);
  }
  // Values near ties: an odd 54-bit (double) or 25-bit (float) number at every position, ±1 far below, ± sign.
  for (int width : {54, 25, 53, 24, 64, 65}) {
    for (int at = 0; at + width <= 124; at += 3) {  // |v| < 2^125: bin 0 below 2^62
      const unsigned __int128 odd = ((static_cast<unsigned __int128>(1) << (width - 1)) | 1) << at;
      for (int below : {0, 1, -1}) {
        for (int sign : {1, -1}) {
          const __int128 v = (static_cast<__int128>(odd) + below) * sign;
          for (int32_t top : tops)
            for (int64_t carry : carries) sums.push_back(with_value(top, v, carry));
        }
      }
    }
  }
  // Powers of two (a low word of 0 under a negative value carries into the high one), ±1, and the largest values.
  for (int p = 0; p < 125; ++p) {
    for (int d : {-1, 0, 1}) {
      const __int128 v = (static_cast<__int128>(1) << p) + d;
      for (int32_t top : tops) {
        sums.push_back(with_value(top, v, 0));
        sums.push_back(with_value(top, -v, 0));
        sums.push_back(with_value(top, -v, 7));
      }
    }
  }
  for (int32_t top : tops) {
    ExactSum s;
    s.top = top, s.terms = 4;
    for (int64_t b0 : {(int64_t(1) << 62) - 1, -(int64_t(1) << 62) + 1, int64_t(0)})
      for (int64_t b1 : {(int64_t(1) << 62) - 1, -(int64_t(1) << 62) + 1, int64_t(0)})
        for (int64_t b2 : {(int64_t(1) << 62) - 1, -(int64_t(1) << 62) + 1, int64_t(0), int64_t(1)}) {
          s.bin[0] = b0, s.bin[1] = b1, s.bin[2] = b2;
          sums.push_back(s);  // the all-zero one: a window over a sum that cancelled to 0
        }
  }
  ExactSum empty, nan;
  nan.top = ExactSum::kNotFinite, nan.terms = 1;
  sums.push_back(empty);
  sums.push_back(nan);
  CHECK(rounding_mismatches(sums) == 0);
  CHECK(exact_value(empty) == 0.0);
  CHECK(!std::signbit(exact_value(empty)));
  CHECK(std::isnan(exact_value_float(nan)));
}

TEST_CASE("ExactSum fast paths: sums of real terms round as the reference does", "[exact]") {
  std::mt19937_64 g(5);
  std::normal_distribution<double> normal;
  std::uniform_int_distribution<int> exponent(-1100, 1030);
  std::vector<ExactSum> sums(4000);
  for (ExactSum& s : sums) {
    const int n = 1 + static_cast<int>(g() % 40);
    const int e = exponent(g);
    for (int k = 0; k < n; ++k) exact_add(s, std::ldexp(normal(g), e - static_cast<int>(g() % 80)));
    if (g() % 8 == 0) {  // heavy cancellation: the negated first terms again
      ExactSum neg;
      std::mt19937_64 again(g());
      std::normal_distribution<double> same;
      for (int k = 0; k < n; ++k) exact_add(neg, -std::ldexp(same(again), e));
      exact_merge(s, neg);
    }
  }
  CHECK(rounding_mismatches(sums) == 0);
}

TEST_CASE("ExactSum fast paths: the array merge and the ring's kernel equal exact_merge pair by pair", "[exact]") {
  std::mt19937_64 g(11);
  std::normal_distribution<double> normal;
  const size_t n = 700;
  std::vector<ExactSum> a(n), b(n);
  for (size_t i = 0; i < n; ++i) {
    const int e = static_cast<int>(g() % 12);  // often the same window, sometimes another
    for (ExactSum* s : {&a[i], &b[i]}) {
      const int kind = static_cast<int>(g() % 10);
      if (kind == 0) continue;  // empty
      if (kind == 1) {          // only zeros: kEmpty with a count
        exact_add(*s, 0.0);
        continue;
      }
      if (kind == 2) exact_add(*s, std::numeric_limits<double>::quiet_NaN());
      for (int k = 0; k < 3; ++k) exact_add(*s, std::ldexp(normal(g), e * 7 - 20));
    }
  }
  a[3] = ExactSum{};  // a finite window (the fast path), at the limit: exactly reached here, passed below
  exact_add(a[3], 1.5);
  a[3].terms = ExactSum::kMaxTerms - 1;
  b[3] = a[3], b[3].terms = 1;
  std::vector<ExactSum> pairwise = a, array = a;
  for (size_t i = 0; i < n; ++i) exact_merge(pairwise[i], b[i]);
  exact_merge(array.data(), b.data(), n);
  CHECK(std::memcmp(pairwise.data(), array.data(), n * sizeof(ExactSum)) == 0);
  // The ring's kernel, aligned and at an odd byte offset (a buffer MPI hands a user op).
  const detail::TypeOps& ops = detail::type_ops<ExactSum>();
  std::vector<char> acc(n * sizeof(ExactSum) + 1), in(n * sizeof(ExactSum) + 1);
  for (size_t offset : {size_t(0), size_t(1)}) {
    std::vector<ExactSum> aligned_acc = a;
    if (offset == 0) {
      ops.add(aligned_acc.data(), b.data(), n);
      CHECK(std::memcmp(aligned_acc.data(), pairwise.data(), n * sizeof(ExactSum)) == 0);
    } else {
      std::memcpy(acc.data() + 1, a.data(), n * sizeof(ExactSum));
      std::memcpy(in.data() + 1, b.data(), n * sizeof(ExactSum));
      ops.add(acc.data() + 1, in.data() + 1, n);
      CHECK(std::memcmp(acc.data() + 1, pairwise.data(), n * sizeof(ExactSum)) == 0);
    }
  }
  b[3].terms = 2;
  CHECK_THROWS_AS(exact_merge(array.data() + 3, b.data() + 3, 1), std::overflow_error);
}

TEST_CASE("ExactSum fast paths: exact_add_rows over many rows and exact_add_squares, term by term", "[exact]") {
  std::mt19937_64 g(99);
  std::normal_distribution<double> normal;
  auto term = [&](int lane_kind, int e) {
    switch (lane_kind) {
      case 0: return 0.0;                                           // a lane of zeros only
      case 1: return std::ldexp(normal(g), -1060 - int(g() % 15));  // subnormals (doubles)
      case 2: return std::ldexp(normal(g), 1000 + int(g() % 20));   // near the top
      case 3: return g() % 40 ? std::ldexp(normal(g), e) : std::numeric_limits<double>::infinity();
      default: return std::ldexp(normal(g), e - int(g() % 90));  // below and inside the window
    }
  };
  for (int count : {0, 1, 3, 16, 37}) {
    const size_t n = 4 * 9 + 3, stride = n + 5;
    std::vector<double> x(stride * count + 1);
    std::vector<int> kind(n), exponent(n);
    for (size_t i = 0; i < n; ++i) kind[i] = int(g() % 8), exponent[i] = int(g() % 200) - 100;
    for (int r = 0; r < count; ++r)
      for (size_t i = 0; i < n; ++i) x[r * stride + i] = term(kind[i], exponent[i]);
    std::vector<float> xf(x.size());
    for (size_t i = 0; i < x.size(); ++i) xf[i] = static_cast<float>(x[i]);
    std::vector<ExactSum> start(n);
    for (size_t i = 0; i < n; ++i) {  // empty, NaN, a window above every term, or one term
      const int k = int(g() % 4);
      if (k == 1) exact_add(start[i], std::nan(""));
      if (k == 2) exact_add(start[i], std::ldexp(1.0, exponent[i] + 300));
      if (k == 3) exact_add(start[i], term(4, exponent[i]));
    }
    std::vector<ExactSum> rows = start, rows_f = start, one = start, one_f = start;
    exact_add_rows(rows.data(), x.data(), n, count, stride);
    exact_add_rows(rows_f.data(), xf.data(), n, count, stride);
    for (int r = 0; r < count; ++r)
      for (size_t i = 0; i < n; ++i) {
        exact_add(one[i], x[r * stride + i]);
        exact_add(one_f[i], static_cast<double>(xf[r * stride + i]));
      }
    INFO("count " << count);
    CHECK(std::memcmp(rows.data(), one.data(), n * sizeof(ExactSum)) == 0);
    CHECK(std::memcmp(rows_f.data(), one_f.data(), n * sizeof(ExactSum)) == 0);
  }
  for (size_t n : {size_t(0), size_t(5), size_t(8), size_t(1030), size_t(2053)}) {
    std::vector<double> x(n);
    for (double& v : x) v = std::ldexp(normal(g), int(g() % 60) - 30);
    if (n > 700) x[700] = std::ldexp(1.0, -540);  // a square that underflows to 0
    std::vector<float> xf(x.begin(), x.end());
    ExactSum squares, squares_f, one, one_f;
    exact_add(squares, 0.25), exact_add(one, 0.25);  // a sum that already holds a term
    exact_add_squares(squares, x.data(), n);
    exact_add_squares(squares_f, xf.data(), n);
    for (size_t i = 0; i < n; ++i) {
      exact_add(one, x[i] * x[i]);
      exact_add(one_f, static_cast<double>(xf[i]) * static_cast<double>(xf[i]));
    }
    INFO("n " << n);
    CHECK(std::memcmp(&squares, &one, sizeof(ExactSum)) == 0);
    CHECK(std::memcmp(&squares_f, &one_f, sizeof(ExactSum)) == 0);
  }
}

TEST_CASE("ExactSum fast paths: the exact LayerNorm and bias backward add their rows as one by one", "[exact]") {
  std::mt19937_64 g(3);
  std::normal_distribution<float> normal;
  for (int N : {1, 15, 16, 37}) {
    const int C = 22;
    std::vector<float> in(size_t(N) * C), d_out(in.size()), w(C), b(C), out(in.size()), mean(N), rstd(N);
    for (float* v : {in.data(), d_out.data()})
      for (size_t i = 0; i < in.size(); ++i) v[i] = normal(g);
    for (int c = 0; c < C; ++c) w[c] = normal(g), b[c] = normal(g);
    layernorm_forward(out.data(), mean.data(), rstd.data(), in.data(), w.data(), b.data(), N, C);
    std::vector<float> d_in(in.size());
    std::vector<ExactSum> sums_w(C), sums_b(C), one_w(C), one_b(C), bias(C), one_bias(C);
    layernorm_backward(d_in.data(), static_cast<float*>(nullptr), static_cast<float*>(nullptr), d_out.data(), in.data(),
                       w.data(), mean.data(), rstd.data(), N, C, RowSplit{}, sums_w.data(), sums_b.data());
    bias_backward_exact(bias.data(), d_out.data(), N, C);
    using Row = Eigen::Map<const Eigen::Array<float, Eigen::Dynamic, 1>>;
    Eigen::Array<float, Eigen::Dynamic, 1> contribution(C);
    for (int n = 0; n < N; ++n) {
      Row x(in.data() + size_t(n) * C, C), dy(d_out.data() + size_t(n) * C, C);
      contribution = dy * (x - mean[n]) * rstd[n];
      exact_add(one_w.data(), contribution.data(), size_t(C));
      exact_add(one_b.data(), dy.data(), size_t(C));
      exact_add(one_bias.data(), dy.data(), size_t(C));
    }
    INFO("N " << N);
    CHECK(std::memcmp(sums_w.data(), one_w.data(), C * sizeof(ExactSum)) == 0);
    CHECK(std::memcmp(sums_b.data(), one_b.data(), C * sizeof(ExactSum)) == 0);
    CHECK(std::memcmp(bias.data(), one_bias.data(), C * sizeof(ExactSum)) == 0);
  }
}
