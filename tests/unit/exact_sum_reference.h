// A slow, independent reference for ExactSum's tests: a big integer in units of 2^-1152 (the lowest bit any
// window can hold) that adds each term bit by bit — the term taken apart with frexp, not with ExactSum's bit
// slicing — optionally only the bits at or above a given position (truncating the term toward zero, as the
// window does), and rounds the total once to the nearest double or float (ties to even, subnormals and
// overflow to infinity included).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

namespace shardlab {
namespace test {

class BigSum {
 public:
  static constexpr int kLowest = -1152;       // position of digit 0's lowest bit
  static constexpr int kHighest = 1200;       // above any sum of < 2^30 finite doubles
  static constexpr int kPositionBias = 1088;  // bin j holds the positions [32j − 1088, 32j − 1056)
  static constexpr int kNoTerm = -1;          // window_low of a multiset without a nonzero finite term
  static constexpr int kDigits = (kHighest - kLowest) / 32 + 1;

  // The position of x's leading bit (x finite, nonzero).
  static int leading_position(double x) {
    int e = 0;
    std::frexp(x, &e);  // |x| in [2^(e-1), 2^e)
    return e - 1;
  }
  // The lowest bit the window keeps for these terms: the bottom of the bin two below the highest bin that
  // a nonzero finite term's leading bit reaches (the documented window of exact_sum.h).
  template <class T>
  static int window_low(const std::vector<T>& terms) {
    int top = kNoTerm;
    for (T x : terms)
      if (x != 0 && std::isfinite(x)) top = std::max(top, (leading_position(x) + kPositionBias) >> 5);
    return top == kNoTerm ? kLowest : 32 * (top - 2) - kPositionBias;
  }

  // Adds x's bits at positions ≥ keep_from (a NaN or infinity makes the total NaN).
  void add(double x, int keep_from = kLowest) {
    if (!std::isfinite(x)) {
      not_finite_ = true;
      return;
    }
    if (x == 0) return;
    int e = 0;
    const double fraction = std::frexp(std::fabs(x), &e);                   // in [0.5, 1)
    const auto mantissa = static_cast<uint64_t>(std::ldexp(fraction, 53));  // exact: 53 bits
    const int64_t sign = x < 0 ? -1 : 1;
    for (int k = 0; k < 53; ++k) {
      const int position = e - 53 + k;
      if (!((mantissa >> k) & 1) || position < keep_from) continue;
      digits_[(position - kLowest) / 32] += sign * (int64_t{1} << ((position - kLowest) % 32));
    }
  }

  // The total rounded once to T (double or float).
  template <class T>
  T rounded() const {
    if (not_finite_) return std::numeric_limits<T>::quiet_NaN();
    std::vector<int64_t> d = normalised(digits_);
    const bool negative = d.back() < 0;
    if (negative) {
      for (int64_t& v : d) v = -v;
      d = normalised(d);
    }
    auto bit = [&](int position) -> int {
      if (position < kLowest) return 0;
      return static_cast<int>((d[(position - kLowest) / 32] >> ((position - kLowest) % 32)) & 1);
    };
    int leading = kLowest - 1;
    for (int p = kLowest + 32 * kDigits - 1; p >= kLowest && leading < kLowest; --p)
      if (bit(p)) leading = p;
    if (leading < kLowest) return T(0);
    constexpr int kPrecision = std::numeric_limits<T>::digits;                         // 53 or 24
    constexpr int kLowestBit = std::numeric_limits<T>::min_exponent - 1 - kPrecision;  // −1074 or −149
    const int lsb = std::max(leading - kPrecision + 1, kLowestBit);
    uint64_t mantissa = 0;
    for (int p = leading; p >= lsb; --p) mantissa = mantissa << 1 | static_cast<uint64_t>(bit(p));
    const bool half = bit(lsb - 1);
    bool sticky = false;
    for (int p = lsb - 2; p >= kLowest && !sticky; --p) sticky = bit(p);
    if (half && (sticky || (mantissa & 1))) ++mantissa;
    const double magnitude = std::ldexp(static_cast<double>(mantissa), lsb);  // exact (or inf)
    return static_cast<T>(negative ? -magnitude : magnitude);
  }

 private:
  // Every digit in [0, 2^32) but the last, which carries the sign.
  static std::vector<int64_t> normalised(std::vector<int64_t> d) {
    for (size_t i = 0; i + 1 < d.size(); ++i) {
      const int64_t carry = d[i] >> 32;  // floor division: arithmetic shift
      d[i] -= carry * (int64_t{1} << 32);
      d[i + 1] += carry;
    }
    return d;
  }

  std::vector<int64_t> digits_ = std::vector<int64_t>(kDigits, 0);
  bool not_finite_ = false;
};

// The documented value of an ExactSum of these terms: every term truncated below the window, summed exactly,
// rounded once.
template <class R, class T>
R window_sum(const std::vector<T>& terms) {
  BigSum s;
  const int low = BigSum::window_low(terms);
  for (T x : terms) s.add(static_cast<double>(x), low);
  return s.template rounded<R>();
}
// The exact sum of the terms, rounded once.
template <class R, class T>
R exact_rounded_sum(const std::vector<T>& terms) {
  BigSum s;
  for (T x : terms) s.add(static_cast<double>(x));
  return s.template rounded<R>();
}

}  // namespace test
}  // namespace shardlab
