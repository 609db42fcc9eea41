// ExactSum (core/exact_sum.h): the same terms give the same bits — value and struct — in any order, grouping into
// partial sums or merge tree; the value is the documented window sum rounded once (checked against a bit-by-bit
// big-integer reference, exact_sum_reference.h), so sums that never reach below the window are the exact sum
// correctly rounded; the window's truncation, NaN and infinity, zeros, subnormals, overflow, float results, the
// array forms and the term limit.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "core/exact_sum.h"
#include "exact_sum_reference.h"

using namespace shardlab;
using shardlab::test::exact_rounded_sum;
using shardlab::test::window_sum;

namespace {

template <class T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}
bool same_struct(const ExactSum& a, const ExactSum& b) { return std::memcmp(&a, &b, sizeof(ExactSum)) == 0; }

template <class T>
ExactSum sum_in_order(const std::vector<T>& terms) {
  ExactSum s;
  for (T x : terms) exact_add(s, static_cast<double>(x));
  return s;
}
double naive_sum(const std::vector<double>& terms) {
  double s = 0;
  for (double x : terms) s += x;
  return s;
}

// Mixed signs, mantissas uniform in [1, 2), exponents uniform in [−spread, spread]; one term in 16 a zero (±0).
std::vector<double> random_terms(std::mt19937_64& rng, size_t n, int spread) {
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  std::uniform_int_distribution<int> exponent(-spread, spread);
  std::vector<double> t(n);
  for (double& x : t) {
    x = std::ldexp(mantissa(rng), exponent(rng)) * (rng() % 16 == 0 ? 0.0 : 1.0);
    if (rng() & 1) x = -x;
  }
  return t;
}

// The terms shuffled, cut at random places into `parts` partial sums (some may be empty), which are then merged
// two at a time, picked at random, in a random tree.
ExactSum grouped_sum(std::vector<double> terms, std::mt19937_64& rng, size_t parts) {
  std::shuffle(terms.begin(), terms.end(), rng);
  std::vector<size_t> cuts{0, terms.size()};
  for (size_t k = 1; k < parts; ++k) cuts.push_back(rng() % (terms.size() + 1));
  std::sort(cuts.begin(), cuts.end());
  std::vector<ExactSum> partial;
  for (size_t k = 0; k + 1 < cuts.size(); ++k) {
    partial.emplace_back();
    for (size_t i = cuts[k]; i < cuts[k + 1]; ++i) exact_add(partial.back(), terms[i]);
  }
  while (partial.size() > 1) {
    const size_t a = rng() % partial.size();
    size_t b = rng() % (partial.size() - 1);
    if (b >= a) ++b;
    exact_merge(partial[a], partial[b]);
    partial.erase(partial.begin() + static_cast<long>(b));
  }
  return partial[0];
}

// Every way of adding the same terms (orders, groupings, merge trees) against the one in their given order:
// struct and value bits; and the value against the documented window sum. Returns the number of mismatches.
size_t disagreements(const std::vector<double>& terms, std::mt19937_64& rng, int ways) {
  const ExactSum first = sum_in_order(terms);
  size_t bad = !same_bits(exact_value(first), window_sum<double>(terms)) +
               !same_bits(exact_value_float(first), window_sum<float>(terms));
  for (int w = 0; w < ways; ++w) {
    const ExactSum s = grouped_sum(terms, rng, 1 + rng() % 8);
    bad += !same_struct(s, first) + !same_bits(exact_value(s), exact_value(first)) +
           !same_bits(exact_value_float(s), exact_value_float(first));
  }
  return bad;
}

}  // namespace

TEST_CASE("ExactSum: any order, grouping or merge tree of the same terms gives the same bits", "[exact]") {
  std::mt19937_64 rng(20240611);
  for (int spread : {60, 600}) {
    size_t bad = 0, naive_orders_differ = 0;
    for (int trial = 0; trial < 60; ++trial) {
      std::vector<double> terms = random_terms(rng, 1 + rng() % 400, spread);
      bad += disagreements(terms, rng, 30);
      std::vector<double> shuffled = terms;
      std::shuffle(shuffled.begin(), shuffled.end(), rng);
      naive_orders_differ += !same_bits(naive_sum(terms), naive_sum(shuffled));
    }
    INFO("exponents in ±" << spread);
    CHECK(bad == 0);
    CHECK(naive_orders_differ > 10);  // the terms are hard enough that a plain sum depends on the order
  }
}

TEST_CASE("ExactSum: heavy cancellation is still order-free and the documented window sum", "[exact]") {
  // Large terms that cancel exactly (x and −x) leave the small ones: the value then keeps only the bits inside
  // the window that the largest term chose — in every order.
  std::mt19937_64 rng(7);
  size_t bad = 0;
  for (int trial = 0; trial < 60; ++trial) {
    std::vector<double> terms = random_terms(rng, 50, 60), small = random_terms(rng, 50, 20);
    for (size_t i = 0; i < 50; ++i) terms.push_back(-terms[i]);
    for (double& x : small) x = std::ldexp(x, -40 - static_cast<int>(rng() % 40));
    terms.insert(terms.end(), small.begin(), small.end());
    bad += disagreements(terms, rng, 20);
  }
  CHECK(bad == 0);
}

TEST_CASE("ExactSum: terms that never reach below the window give the exact sum, rounded once", "[exact]") {
  // Each term is a 40-bit integer times 2^e, e in [−20, 20]: its bits lie in [−20, 60). The highest bin any of
  // them reaches is at most bin 35 ([32, 64)), so the window reaches down to 32·33 − 1088 = −32 or lower: no bit
  // is ever dropped, whatever the cancellation. The value must be the exact sum correctly rounded — which the
  // plain double sum often is not.
  std::mt19937_64 rng(99);
  size_t wrong_double = 0, wrong_float = 0, naive_wrong = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<double> terms(2 + rng() % 200);
    for (double& x : terms) {
      const double m = static_cast<double>(rng() >> 24);  // 40 bits
      x = std::ldexp(rng() & 1 ? -m : m, static_cast<int>(rng() % 41) - 20);
    }
    const ExactSum s = grouped_sum(terms, rng, 1 + rng() % 5);
    const double exact = exact_rounded_sum<double>(terms);
    wrong_double += !same_bits(exact_value(s), exact);
    wrong_float += !same_bits(exact_value_float(s), exact_rounded_sum<float>(terms));
    naive_wrong += !same_bits(naive_sum(terms), exact);
  }
  CHECK(wrong_double == 0);
  CHECK(wrong_float == 0);
  CHECK(naive_wrong > 30);
}

TEST_CASE("ExactSum: small sums with known correctly rounded results", "[exact]") {
  CHECK(same_bits(exact_value(sum_in_order<double>({0.1, 0.2})), 0.30000000000000004));
  CHECK(same_bits(exact_value(sum_in_order<double>({0.2, 0.1})), 0.30000000000000004));
  // Left to right, 1e16 + 1 rounds back to 1e16 (the spacing there is 2), twice: the plain sum is 0.
  const std::vector<double> t{1e16, 1, 1, -1e16};
  CHECK(naive_sum(t) == 0);
  CHECK(exact_value(sum_in_order(t)) == 2);
  // 3·0.1 exactly is 0.3000000000000000166533453693773481063544750213623046875: nearest double 0.30000000000000004.
  CHECK(same_bits(exact_value(sum_in_order<double>({0.1, 0.1, 0.1})), 0.30000000000000004));
  // Ties round to even: 1 + 2^-53 is halfway between 1 and 1 + 2^-52 → 1; 1 + 2^-52 + 2^-53 → 1 + 2^-51.
  CHECK(exact_value(sum_in_order<double>({1, std::ldexp(1, -53)})) == 1);
  CHECK(exact_value(sum_in_order<double>({1, std::ldexp(1, -52), std::ldexp(1, -53)})) == 1 + std::ldexp(1, -51));
  // Just above the tie (a bit far below, still in the window) rounds up — also by the window's lowest bit, 2^-64,
  // which a rounding through a 64-bit mantissa (long double) would first turn into a tie.
  CHECK(exact_value(sum_in_order<double>({1, std::ldexp(1, -53), std::ldexp(1, -63)})) == 1 + std::ldexp(1, -52));
  CHECK(exact_value(sum_in_order<double>({1, std::ldexp(1, -53), std::ldexp(1, -64)})) == 1 + std::ldexp(1, -52));
}

TEST_CASE("ExactSum: bits below the 3-bin window are dropped, the window depends on the bin", "[exact]") {
  // Bin j holds the bit positions [32j − 1088, 32j − 1056). 1.0's leading bit, position 0, is the lowest bit of
  // bin 34 = [0, 32); the window keeps bins 34, 33, 32 = positions [−64, 32). So beside a 1.0, 2^-60 and 2^-64
  // are kept and 2^-65, 2^-70 are dropped — whether they came before or after the 1.0.
  auto value = [](std::vector<double> t) { return exact_value(sum_in_order(t)); };
  const double p60 = std::ldexp(1, -60), p64 = std::ldexp(1, -64), p65 = std::ldexp(1, -65), p70 = std::ldexp(1, -70);
  CHECK(value({1.0, p60, -1.0}) == p60);
  CHECK(value({1.0, p64, -1.0}) == p64);
  CHECK(value({1.0, p65, -1.0}) == 0);
  CHECK(value({1.0, p70, -1.0}) == 0);
  CHECK(value({p70, 1.0, -1.0}) == 0);   // added first, dropped when the 1.0 moves the window up
  CHECK(value({-p70, 1.0, -1.0}) == 0);  // truncated toward zero, negative terms too
  CHECK(value({p70, -p70}) == 0);
  CHECK(value({p70, p70}) == 2 * p70);  // alone, 2^-70 sets the window itself
  // 2^31 is still in bin 34, 2^32 is in bin 35 (window [−32, 64)): the same 2^-64 kept beside one, not the other.
  CHECK(value({std::ldexp(1, 31), p64, -std::ldexp(1, 31)}) == p64);
  CHECK(value({std::ldexp(1, 32), p64, -std::ldexp(1, 32)}) == 0);
  // Within a term: 1 + 2^-52 and −1 beside a 2^31 keep 2^-52 (bits ≥ −64); beside 2^40 (bin 35) it is dropped.
  CHECK(value({std::ldexp(1, 31), 1 + std::ldexp(1, -52), -1.0, -std::ldexp(1, 31)}) == std::ldexp(1, -52));
  CHECK(value({std::ldexp(1, 40), 1 + std::ldexp(1, -52), -1.0, -std::ldexp(1, 40)}) == 0);
}

TEST_CASE("ExactSum: a NaN or infinite term makes the value NaN, wherever it comes", "[exact]") {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  std::mt19937_64 rng(3);
  for (double bad : {nan, inf, -inf}) {
    for (size_t at : {size_t{0}, size_t{5}, size_t{9}}) {
      std::vector<double> t = random_terms(rng, 9, 60);
      t.insert(t.begin() + static_cast<long>(at), bad);
      const ExactSum s = sum_in_order(t);
      CHECK(std::isnan(exact_value(s)));
      CHECK(std::isnan(exact_value_float(s)));
      CHECK(s.terms == 10);
      CHECK(disagreements(t, rng, 20) == 0);  // the NaN struct is the same in every order (and the reference NaN)
    }
  }
  CHECK(std::isnan(exact_value(sum_in_order<double>({inf, -inf}))));
  CHECK(std::isnan(exact_value(sum_in_order<double>({inf, inf}))));
  ExactSum a = sum_in_order<double>({1.0}), b = sum_in_order<double>({2.0, nan});
  exact_merge(a, b);
  CHECK(std::isnan(exact_value(a)));
  exact_merge(a, sum_in_order<double>({3.0}));  // stays NaN
  CHECK(std::isnan(exact_value(a)));
  CHECK(a.terms == 4);
}

TEST_CASE("ExactSum: empty sums, zeros and merging nothing", "[exact]") {
  const ExactSum empty;
  CHECK(same_bits(exact_value(empty), 0.0));  // +0, not −0
  CHECK(same_bits(exact_value_float(empty), 0.0f));
  const ExactSum zeros = sum_in_order<double>({0.0, -0.0, 0.0});
  CHECK(same_bits(exact_value(zeros), 0.0));
  CHECK(zeros.terms == 3);
  CHECK(same_bits(exact_value(sum_in_order<double>({-0.0})), 0.0));
  CHECK(same_bits(exact_value(sum_in_order<double>({2.5, -2.5})), 0.0));  // exact cancellation gives +0
  CHECK(same_bits(exact_value(sum_in_order<double>({-1.5, 0.0, -0.0})), -1.5));
  ExactSum x = sum_in_order<double>({1.25, -3.0});
  const ExactSum before = x;
  exact_merge(x, empty);  // no terms: nothing changes, not even the count
  CHECK(same_struct(x, before));
  exact_merge(x, zeros);  // zeros: only the count
  CHECK(x.terms == before.terms + 3);
  CHECK(same_bits(exact_value(x), -1.75));
  ExactSum y = zeros;  // a sum of zeros takes the other's window
  exact_merge(y, before);
  CHECK(same_bits(exact_value(y), -1.75));
  CHECK(y.top == before.top);
  ExactSum only_zeros = zeros;  // zeros merged into zeros: still the struct of the six zeros added one by one
  exact_merge(only_zeros, zeros);
  CHECK(same_struct(only_zeros, sum_in_order<double>({0.0, 0.0, -0.0, 0.0, -0.0, 0.0})));
  CHECK(same_struct(sum_in_order<double>({0.0}), sum_in_order<double>({-0.0})));
}

TEST_CASE("ExactSum: subnormal terms and results", "[exact]") {
  const double tiny = std::numeric_limits<double>::denorm_min();  // 2^-1074
  CHECK(same_bits(exact_value(sum_in_order<double>({5e-324, 5e-324})), 1e-323));
  CHECK(same_bits(exact_value(sum_in_order<double>({tiny, tiny, tiny, -tiny})), 2 * tiny));
  const double largest_subnormal = std::numeric_limits<double>::min() - tiny;
  CHECK(exact_value(sum_in_order<double>({largest_subnormal, tiny})) == std::numeric_limits<double>::min());
  CHECK(exact_value(sum_in_order<double>({std::numeric_limits<double>::min(), -tiny})) == largest_subnormal);
  const float ftiny = std::numeric_limits<float>::denorm_min();  // 2^-149, a float term
  CHECK(same_bits(exact_value_float(sum_in_order<float>({ftiny, ftiny, ftiny})), 3 * ftiny));
  // A double term far below float's range rounds to zero as a float, the double keeps it.
  CHECK(exact_value_float(sum_in_order<double>({1e-300})) == 0.0f);
  CHECK(exact_value(sum_in_order<double>({1e-300})) == 1e-300);
}

TEST_CASE("ExactSum: huge terms cancel without overflow, a sum past the largest double is infinite", "[exact]") {
  const double big = std::numeric_limits<double>::max(), inf = std::numeric_limits<double>::infinity();
  CHECK(naive_sum({big, big, -big}) == inf);
  CHECK(exact_value(sum_in_order<double>({big, big, -big})) == big);
  CHECK(exact_value(sum_in_order<double>({big, -big, big, 1.0})) == big);
  CHECK(exact_value(sum_in_order<double>({big, big})) == inf);
  CHECK(exact_value(sum_in_order<double>({-big, -big})) == -inf);
  // Half an ulp of the largest double (2^970) on top of it: the tie goes away from its odd mantissa, to infinity;
  // half of that stays below the tie.
  CHECK(exact_value(sum_in_order<double>({big, std::ldexp(1, 970)})) == inf);
  CHECK(exact_value(sum_in_order<double>({big, std::ldexp(1, 969)})) == big);
  std::vector<double> t(10, 1e308);
  t.insert(t.end(), 9, -1e308);
  std::mt19937_64 rng(11);
  CHECK(exact_value(sum_in_order(t)) == 1e308);
  CHECK(disagreements(t, rng, 30) == 0);
  CHECK(exact_value_float(sum_in_order<double>({1e30, 1e30, -1e30})) == 1e30f);
  CHECK(exact_value(sum_in_order<double>({1e308, -1e308, 1.5})) == 0);  // 1.5 is far below 1e308's window
  CHECK(exact_value_float(sum_in_order<double>({1e300})) == std::numeric_limits<float>::infinity());
}

TEST_CASE("ExactSum: a float result is rounded once from the sum, not through a double", "[exact]") {
  // 1 + 2^-24 + 2^-60: just above halfway between the floats 1 and 1 + 2^-23, so it rounds up. Rounded to a
  // double first it would be 1 + 2^-24, exactly halfway, and then round to even: 1.
  const ExactSum s = sum_in_order<double>({1.0, std::ldexp(1, -24), std::ldexp(1, -60)});
  CHECK(exact_value_float(s) == 1 + std::ldexp(1.0f, -23));
  CHECK(static_cast<float>(exact_value(s)) == 1.0f);
}

TEST_CASE("ExactSum: the array forms for float and double", "[exact]") {
  std::mt19937_64 rng(5);
  const size_t n = 37;
  std::vector<double> xd = random_terms(rng, n, 60), yd = random_terms(rng, n, 60);
  std::vector<float> xf(n), yf(n);
  for (size_t i = 0; i < n; ++i) {
    xf[i] = static_cast<float>(xd[i] * 1e-3);
    yf[i] = static_cast<float>(-yd[i]);
  }
  std::vector<ExactSum> a(n), b(n);
  exact_add(a.data(), xd.data(), n);
  exact_add(a.data(), xf.data(), n);
  exact_add(b.data(), yd.data(), n);
  exact_add(b.data(), yf.data(), n);
  exact_merge(a.data(), b.data(), n);
  std::vector<double> out_d(n);
  std::vector<float> out_f(n);
  exact_round(out_d.data(), a.data(), n);
  exact_round(out_f.data(), a.data(), n);
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    const std::vector<double> terms{yf[i], xd[i], yd[i], xf[i]};  // the same multiset, another order
    const ExactSum one = sum_in_order(terms);
    bad += !same_struct(one, a[i]) + !same_bits(out_d[i], exact_value(one)) +
           !same_bits(out_f[i], exact_value_float(one)) + !same_bits(out_d[i], window_sum<double>(terms)) +
           !same_bits(out_f[i], window_sum<float>(terms));
  }
  CHECK(bad == 0);
}

TEST_CASE("ExactSum: more than kMaxTerms terms throw std::overflow_error and leave the sum as it was", "[exact]") {
  ExactSum a = sum_in_order<double>({1.0}), b;
  a.terms = ExactSum::kMaxTerms / 2 + 1;
  b.terms = ExactSum::kMaxTerms / 2;
  const ExactSum before = a;
  CHECK_THROWS_AS(exact_merge(a, b), std::overflow_error);
  CHECK(same_struct(a, before));
  CHECK_THROWS_AS(exact_merge(&a, &b, 1), std::overflow_error);
  b.terms = ExactSum::kMaxTerms / 2 - 1;  // exactly kMaxTerms in all: allowed
  CHECK_NOTHROW(exact_merge(a, b));
  CHECK(a.terms == ExactSum::kMaxTerms);
  CHECK_THROWS_AS(exact_add(a, 1.0), std::overflow_error);
  CHECK_THROWS_AS(exact_add(a, 0.0), std::overflow_error);  // zeros count too
  const double one = 1.0;
  CHECK_THROWS_AS(exact_add(&a, &one, 1), std::overflow_error);
  CHECK(a.terms == ExactSum::kMaxTerms);
  CHECK(exact_value(a) == 1.0);
}

TEST_CASE("ExactSum: exact_add_rows gives each sum the bits of its terms added one by one", "[exact]") {
  std::mt19937_64 g(77);
  std::uniform_int_distribution<int> exponent(-1100, 1000), pick(0, 19);
  std::normal_distribution<double> normal;
  auto term = [&]() {  // wide exponents, zeros, subnormals, the odd NaN and infinity
    switch (pick(g)) {
      case 0: return 0.0;
      case 1: return -0.0;
      case 2: return std::ldexp(normal(g), -1070);
      default: return std::ldexp(normal(g), exponent(g) / (pick(g) < 10 ? 20 : 1));
    }
  };
  for (size_t n : {size_t(1), size_t(3), size_t(4), size_t(7), size_t(300), size_t(517)}) {
    for (int count : {1, 2, 5}) {
      INFO("n " << n << ", count " << count);
      const size_t stride = n + 3;
      std::vector<double> x(stride * count);
      for (double& v : x) v = term();
      if (n > 5) x[5] = std::numeric_limits<double>::quiet_NaN();
      if (count > 1) x[stride + 2] = -INFINITY;
      std::vector<float> xf(x.size());
      for (size_t i = 0; i < x.size(); ++i) xf[i] = static_cast<float>(x[i]);
      std::vector<ExactSum> rows(n), one_by_one(n), rows_f(n), one_by_one_f(n);
      for (size_t i = 0; i < n; ++i) {  // start from sums that already hold a term
        const double start = term();
        exact_add(rows[i], start), exact_add(one_by_one[i], start), exact_add(rows_f[i], start);
        exact_add(one_by_one_f[i], start);
      }
      exact_add_rows(rows.data(), x.data(), n, count, stride);
      exact_add_rows(rows_f.data(), xf.data(), n, count, stride);
      for (int c = 0; c < count; ++c)
        for (size_t i = 0; i < n; ++i) {
          exact_add(one_by_one[i], x[c * stride + i]);
          exact_add(one_by_one_f[i], static_cast<double>(xf[c * stride + i]));
        }
      CHECK(std::memcmp(rows.data(), one_by_one.data(), n * sizeof(ExactSum)) == 0);
      CHECK(std::memcmp(rows_f.data(), one_by_one_f.data(), n * sizeof(ExactSum)) == 0);
    }
  }
}
