// The order-free sum (see exact_sum.h): a term's 53-bit mantissa split at fixed 32-bit bin boundaries into the
// 3 kept bins, integer additions, one rounding at the end.
#include "core/exact_sum.h"

#include <algorithm>
#include <cmath>
#ifdef __AVX2__
#include <immintrin.h>
#endif
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace shardlab {

namespace {
constexpr int kBias = 1088;  // bin j covers the bit positions [32j − kBias, 32j − kBias + 32)

// Moves the window of s up to bin `to` (≥ s.top): the bins that fall below it are dropped whole.
void raise_top(ExactSum& s, int32_t to) {
  const int32_t d = to - s.top;
  for (int k = 2; k >= 0; --k) s.bin[k] = k - d >= 0 ? s.bin[k - d] : 0;
  s.top = to;
}

[[noreturn]] __attribute__((noinline, cold)) void too_many_terms() {
  throw std::overflow_error("an exact sum of more than " + std::to_string(ExactSum::kMaxTerms) +
                            " terms (its bins could overflow)");
}

inline void count_terms(ExactSum& s, int64_t more) {
  if (s.terms + more > ExactSum::kMaxTerms) too_many_terms();
  s.terms = static_cast<int32_t>(s.terms + more);
}
}  // namespace

namespace {
// One term into acc (its count already taken). The term's bits inside the window [L, L + 96), L the lowest kept
// bin's first position, as one 128-bit integer in units of 2^L (bits below L dropped: truncation toward zero), then
// cut into the three 32-bit bins.
inline void deposit(ExactSum& acc, double x) {
  if (acc.top == ExactSum::kNotFinite) return;
  uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  const int biased = static_cast<int>((bits >> 52) & 0x7ff);
  if (biased == 0x7ff) {  // NaN or ±inf
    acc.top = ExactSum::kNotFinite;
    acc.bin[0] = acc.bin[1] = acc.bin[2] = 0;
    return;
  }
  uint64_t m = bits & ((uint64_t(1) << 52) - 1);
  int lsb = -1074;  // the bit position of m's lowest bit
  if (biased != 0) {
    m |= uint64_t(1) << 52;
    lsb = biased - 1075;
  } else if (m == 0) {
    return;  // ±0
  }
  const int high = lsb + 63 - __builtin_clzll(m);  // the leading bit's position
  const int32_t j = (high + kBias) >> 5;
  if (acc.top == ExactSum::kEmpty)
    acc.top = j;
  else if (j > acc.top)
    raise_top(acc, j);
  // m · 2^shift in units of the window's lowest bit, truncated: m placed at bit 64, then shifted right by 64 − shift
  // (every bit drops when that is 128 or more). shift ≤ 43, except near the bottom of the range, where bin 0 is the
  // lowest and the window reaches below the smallest subnormal (up to 78: a plain left shift then).
  const int shift = lsb - (32 * (acc.top - 2) - kBias);
  const int right = 64 - shift;
  const unsigned __int128 w = right <= 0    ? static_cast<unsigned __int128>(m) << shift
                              : right < 128 ? (static_cast<unsigned __int128>(m) << 64) >> right
                                            : 0;
  const int64_t negate = -static_cast<int64_t>(bits >> 63);  // 0 or −1: (b ^ negate) − negate is ±b, no branch
  const auto part = [&](int at) {
    const int64_t b = static_cast<int64_t>(static_cast<uint64_t>(w >> at) & 0xffffffffu);
    return (b ^ negate) - negate;
  };
  acc.bin[0] += part(64);
  acc.bin[1] += part(32);
  acc.bin[2] += part(0);
}
}  // namespace

void exact_add(ExactSum& acc, double x) {
  count_terms(acc, 1);
  deposit(acc, x);
}

void exact_merge(ExactSum& acc, const ExactSum& other) {
  if (other.terms == 0) return;
  count_terms(acc, other.terms);
  if (acc.top == ExactSum::kNotFinite) return;
  if (other.top == ExactSum::kNotFinite) {
    acc.top = ExactSum::kNotFinite;
    acc.bin[0] = acc.bin[1] = acc.bin[2] = 0;
    return;
  }
  if (other.top == ExactSum::kEmpty) return;  // only zeros
  ExactSum o = other;
  if (acc.top == ExactSum::kEmpty) acc.top = o.top;
  if (o.top > acc.top) raise_top(acc, o.top);
  if (acc.top > o.top) raise_top(o, acc.top);
  for (int k = 0; k < 3; ++k) acc.bin[k] += o.bin[k];
}

namespace {
// x · 2^e (the same result as std::ldexp, faster: one multiplication by 2^e when 2^e is a normal number of T).
template <class T>
inline T scaled(T x, int e) {
  using Bits = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;
  constexpr int bias = std::numeric_limits<T>::max_exponent - 1;  // 1023, 127: the normal exponents are ±bias
  if (e < 1 - bias || e > bias) return std::ldexp(x, e);
  const Bits bits = static_cast<Bits>(e + bias) << (std::numeric_limits<T>::digits - 1);
  T p;
  std::memcpy(&p, &bits, sizeof p);
  return x * p;
}

// The value as one 128-bit integer, its leading 64 bits converted: the plain form value_of must equal (the tests').
template <class T>
T value_reference(const ExactSum& s) {
  if (s.top == ExactSum::kNotFinite) return std::numeric_limits<T>::quiet_NaN();
  if (s.top == ExactSum::kEmpty) return T(0);
  // |bin| < 2^62, so the sum below stays under 2^127: one int128 (the bins scaled by multiplying: a left shift of a
  // negative value is undefined before C++20).
  const __int128 v = static_cast<__int128>(s.bin[0]) * (static_cast<__int128>(1) << 64) +
                     static_cast<__int128>(s.bin[1]) * (static_cast<__int128>(1) << 32) + s.bin[2];
  if (v == 0) return T(0);
  // Rounded once: its leading 64 bits, with every bit below them folded into the lowest one (sticky), convert to T
  // with the same round-to-nearest-even as the whole 128-bit value (T keeps at most 53 of the 64 bits).
  const unsigned __int128 a = v < 0 ? -static_cast<unsigned __int128>(v) : static_cast<unsigned __int128>(v);
  const uint64_t high = static_cast<uint64_t>(a >> 64);
  int drop = 0;
  uint64_t lead = static_cast<uint64_t>(a);
  if (high != 0) {
    drop = 64 - __builtin_clzll(high);  // bits below the leading 64
    lead = static_cast<uint64_t>(a >> drop) | ((a & ((static_cast<unsigned __int128>(1) << drop) - 1)) != 0);
  }
  const T r = scaled(static_cast<T>(lead), drop + 32 * (s.top - 2) - kBias);
  return v < 0 ? -r : r;
}

// The same value as value_reference, without 128-bit shifts: the carries between the bins moved up so that
// v = hi·2^64 + lo (lo unsigned), |v| in two 64-bit words, normalised so its leading bit is bit 63 of `lead`, then
// rounded to odd into 63 bits — the bit below lead's upper 63 or'ed with every bit under it into the lowest one.
// A 63-bit integer rounded to odd converts to T (53 or 24 bits, at least 2 fewer) with the same round-to-nearest-
// even as the whole value, and it fits an int64, whose signed conversion is one instruction (an unsigned one is a
// branch on x86-64 before AVX-512). Both this and the reference then round once more only in scaled(), which is a
// correctly rounded x·2^e in both its branches, of the same real number: the result has the same bits.
template <class T>
inline T value_of(const ExactSum& s) {
  // kEmpty (as unsigned, the largest) and kNotFinite in one test
  if (static_cast<uint32_t>(s.top) >= static_cast<uint32_t>(ExactSum::kNotFinite))
    return s.top == ExactSum::kEmpty ? T(0) : std::numeric_limits<T>::quiet_NaN();
  // Each bin's bits above its 32 moved into the next (right shifts of negative values are arithmetic in GCC and
  // Clang): |bin| < 2^62 keeps mid and hi inside an int64.
  const int64_t mid = s.bin[1] + (s.bin[2] >> 32);
  const int64_t hi = s.bin[0] + (mid >> 32);
  const uint64_t lo = (static_cast<uint64_t>(mid) << 32) | (static_cast<uint64_t>(s.bin[2]) & 0xffffffffu);
  const uint64_t neg = static_cast<uint64_t>(hi >> 63);  // all ones when v < 0
  // |v| = (v ^ neg) − neg over the 128 bits: the low word's +1 carries into the high one when lo is 0.
  const uint64_t a_lo = (lo ^ neg) - neg, a_hi = (static_cast<uint64_t>(hi) ^ neg) + (neg & (lo == 0));
  int lz;  // |v|'s leading zeros out of 128
  uint64_t lead, rest;
  if (a_hi != 0) {
    lz = __builtin_clzll(a_hi);
    lead = (a_hi << lz) | (a_lo >> 1 >> (63 - lz));
    rest = a_lo << lz;
  } else if (a_lo != 0) {
    lz = __builtin_clzll(a_lo);
    lead = a_lo << lz;
    rest = 0;
    lz += 64;
  } else {
    return T(0);
  }
  // |v| = (lead + rest·2^−64)·2^(64 − lz) ≈ odd·2^(65 − lz)
  const uint64_t odd = (lead >> 1) | (lead & 1) | (rest != 0);
  const T r = static_cast<T>(static_cast<int64_t>((odd ^ neg) - neg));  // RNE is symmetric: the sign goes in first
  return scaled(r, 65 - lz + 32 * (s.top - 2) - kBias);
}
}  // namespace

double exact_value(const ExactSum& s) { return value_of<double>(s); }
float exact_value_float(const ExactSum& s) { return value_of<float>(s); }
template <class T>
T exact_value_reference(const ExactSum& s) {
  return value_reference<T>(s);
}

template <class T>
void exact_add(ExactSum* acc, const T* x, size_t n) {
  exact_add_rows(acc, x, n, 1, n);
}

namespace {
// The bin of x's leading bit (ExactSum::kEmpty for ±0, kNotFinite for NaN and ±inf).
inline int32_t bin_of(double x) {
  uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  const int biased = static_cast<int>((bits >> 52) & 0x7ff);
  if (biased == 0x7ff) return ExactSum::kNotFinite;
  const uint64_t m = bits & ((uint64_t(1) << 52) - 1);
  if (biased == 0 && m == 0) return ExactSum::kEmpty;
  const int high = biased ? biased - 1023 : -1074 + 63 - __builtin_clzll(m);
  return (high + kBias) >> 5;
}

// Moves acc's window up to cover x, as deposit() would (the window a sum ends with is the same in any order).
inline void cover(ExactSum& acc, double x) {
  const int32_t j = bin_of(x);
  if (j <= acc.top || acc.top == ExactSum::kNotFinite) return;
  if (j == ExactSum::kNotFinite) {
    acc.top = ExactSum::kNotFinite;
    acc.bin[0] = acc.bin[1] = acc.bin[2] = 0;
  } else if (acc.top == ExactSum::kEmpty) {
    acc.top = j;
  } else {
    raise_top(acc, j);
  }
}

#ifdef __AVX2__
inline __m256d load4(const double* x) { return _mm256_loadu_pd(x); }
inline __m256d load4(const float* x) { return _mm256_cvtps_pd(_mm_loadu_ps(x)); }

// Four sums as a 4×4 matrix of 64-bit fields (top|terms, bin 0, bin 1, bin 2), held as its columns.
struct Columns {
  __m256i head, b0, b1, b2;
};
inline Columns load_columns(const ExactSum* acc) {
  const __m256i r0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + 0)),
                r1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + 1)),
                r2 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + 2)),
                r3 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(acc + 3));
  const __m256i t0 = _mm256_unpacklo_epi64(r0, r1), t1 = _mm256_unpackhi_epi64(r0, r1),
                t2 = _mm256_unpacklo_epi64(r2, r3), t3 = _mm256_unpackhi_epi64(r2, r3);
  return {_mm256_permute2x128_si256(t0, t2, 0x20), _mm256_permute2x128_si256(t1, t3, 0x20),
          _mm256_permute2x128_si256(t0, t2, 0x31), _mm256_permute2x128_si256(t1, t3, 0x31)};
}
inline void store_columns(ExactSum* acc, const Columns& c) {
  const __m256i u0 = _mm256_unpacklo_epi64(c.head, c.b0), u1 = _mm256_unpackhi_epi64(c.head, c.b0),
                u2 = _mm256_unpacklo_epi64(c.b1, c.b2), u3 = _mm256_unpackhi_epi64(c.b1, c.b2);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + 0), _mm256_permute2x128_si256(u0, u2, 0x20));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + 1), _mm256_permute2x128_si256(u1, u3, 0x20));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + 2), _mm256_permute2x128_si256(u0, u2, 0x31));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + 3), _mm256_permute2x128_si256(u1, u3, 0x31));
}

// Covers acc[k] for the terms x[g·stride + k], k < 4, g < count, as covering each in turn would: the bin is
// monotonic in |x| (NaN and ±inf above every finite value), so the largest |term| ends the window where they would.
// (biased + 65) >> 5 is a normal number's bin, an upper bound for a subnormal's and 66 for NaN and ±inf: where it is
// not above top, and where every term is ±0, covering moves nothing.
template <class T>
inline void cover_rows4(ExactSum* acc, const T* x, int count, size_t stride) {
  const __m256i magnitude = _mm256_set1_epi64x(std::numeric_limits<int64_t>::max());
  __m256i most = _mm256_setzero_si256();
  for (int g = 0; g < count; ++g) {
    const __m256i a = _mm256_and_si256(_mm256_castpd_si256(load4(x + g * stride)), magnitude);
    most = _mm256_blendv_epi8(most, a, _mm256_cmpgt_epi64(a, most));
  }
  alignas(32) uint64_t largest[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(largest), most);
  for (int k = 0; k < 4; ++k) {
    if (largest[k] == 0 || static_cast<int32_t>(((largest[k] >> 52) + 65) >> 5) <= acc[k].top) continue;
    double v;
    std::memcpy(&v, &largest[k], sizeof v);
    cover(acc[k], v);
  }
}

// acc[k] += x[g·stride + k] for k < 4 and every g < count, into sums whose windows already cover the terms: the
// sums stay in registers while every row goes in. Each bin's part is m shifted by (the term's lowest bit − the bin's
// lowest bit), left or right (a count of 64 or more gives 0, so the two shifts or'ed are the one that applies),
// masked to 32 bits and negated with the term's sign. Sums that hold a NaN or an infinity are left alone (their
// terms' m is masked to 0).
template <class T>
inline void deposit_rows4(ExactSum* acc, const T* x, int count, size_t stride) {
  Columns c = load_columns(acc);
  const __m256i one = _mm256_set1_epi64x(1), low52 = _mm256_set1_epi64x((int64_t(1) << 52) - 1),
                mask32 = _mm256_set1_epi64x(0xffffffff), zero = _mm256_setzero_si256();
  const __m256i top = _mm256_and_si256(c.head, mask32);
  const __m256i finite =
      _mm256_xor_si256(_mm256_cmpeq_epi64(top, _mm256_set1_epi64x(ExactSum::kNotFinite)), _mm256_set1_epi64x(-1));
  // The shift of bin 2 (the lowest) is lsb − (32·(top − 2) − kBias), lsb = max(biased, 1) − 1075 the term's lowest
  // bit: max(biased, 1) − base. Bins 1 and 0 are 32 and 64 less.
  const __m256i base = _mm256_sub_epi64(_mm256_slli_epi64(top, 5), _mm256_set1_epi64x(64 + kBias - 1075));
  const auto part = [&](__m256i m, __m256i s, __m256i negate) {
    const __m256i p = _mm256_and_si256(
        _mm256_or_si256(_mm256_sllv_epi64(m, s), _mm256_srlv_epi64(m, _mm256_sub_epi64(zero, s))), mask32);
    return _mm256_sub_epi64(_mm256_xor_si256(p, negate), negate);
  };
  for (int g = 0; g < count; ++g) {
    const __m256i bits = _mm256_castpd_si256(load4(x + g * stride));
    const __m256i biased = _mm256_and_si256(_mm256_srli_epi64(bits, 52), _mm256_set1_epi64x(0x7ff));
    // (biased < 2^11 in each lane's low half, 0 in its high half: the 32-bit min and max are the 64-bit ones)
    const __m256i m = _mm256_and_si256(
        _mm256_or_si256(_mm256_and_si256(bits, low52), _mm256_slli_epi64(_mm256_min_epi32(biased, one), 52)), finite);
    const __m256i shift2 = _mm256_sub_epi64(_mm256_max_epi32(biased, one), base);
    const __m256i negate = _mm256_sub_epi64(zero, _mm256_srli_epi64(bits, 63));
    c.b0 = _mm256_add_epi64(c.b0, part(m, _mm256_sub_epi64(shift2, _mm256_set1_epi64x(64)), negate));
    c.b1 = _mm256_add_epi64(c.b1, part(m, _mm256_sub_epi64(shift2, _mm256_set1_epi64x(32)), negate));
    c.b2 = _mm256_add_epi64(c.b2, part(m, shift2, negate));
  }
  store_columns(acc, c);
}
#endif
}  // namespace

template <class T>
void exact_add_rows(ExactSum* acc, const T* x, size_t n, int count, size_t stride) {
  constexpr size_t kBlock = 256;  // 8 KB of sums stay in the L1 cache while every array adds to them
  for (size_t b = 0; b < n; b += kBlock) {
    const size_t e = std::min(n, b + kBlock);
    for (size_t i = b; i < e; ++i) count_terms(acc[i], count);
    // First each sum's window moves up to cover every new term (where deposit() would end it, whatever the order),
    // then the terms go in with no window to move: four sums at a time with AVX2, the rest one term at a time.
    size_t i = b;
#ifdef __AVX2__
    for (; i + 4 <= e; i += 4) cover_rows4(acc + i, x + i, count, stride);
    for (size_t k = b; k < i; k += 4) deposit_rows4(acc + k, x + k, count, stride);
#endif
    for (int g = 0; g < count; ++g)
      for (size_t k = i; k < e; ++k) cover(acc[k], static_cast<double>(x[g * stride + k]));
    for (int g = 0; g < count; ++g)
      for (size_t k = i; k < e; ++k) deposit(acc[k], static_cast<double>(x[g * stride + k]));
  }
}

// The common case first: two sums with the same finite window add their bins and counts, as exact_merge(a, o)
// does then (no window to move); everything else (an empty, NaN or other window, a count past the limit) goes to it.
void exact_merge(ExactSum* acc, const ExactSum* other, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    ExactSum& a = acc[i];
    const ExactSum& o = other[i];
    if (a.top == o.top && static_cast<uint32_t>(a.top) < static_cast<uint32_t>(ExactSum::kNotFinite) && o.terms > 0 &&
        int64_t(a.terms) + o.terms <= ExactSum::kMaxTerms) {
      a.terms += o.terms;
      a.bin[0] += o.bin[0];
      a.bin[1] += o.bin[1];
      a.bin[2] += o.bin[2];
    } else {
      exact_merge(a, o);
    }
  }
}

template <class T>
void exact_round(T* out, const ExactSum* acc, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = value_of<T>(acc[i]);
}

// The squares in chunks of kLanes × up to 128, column k of a chunk into part[k] by the array form, the parts merged
// into s at the end: the sum is order-free, so these are the bits of adding each square to s in turn.
template <class T>
void exact_add_squares(ExactSum& s, const T* x, size_t n) {
  constexpr size_t kLanes = 8, kRows = 128;
  ExactSum part[kLanes];
  double squares[kLanes * kRows];
  size_t i = 0;
  while (n - i >= kLanes) {
    const size_t rows = std::min(kRows, (n - i) / kLanes);
    for (size_t k = 0; k < rows * kLanes; ++k) {
      const double v = static_cast<double>(x[i + k]);
      squares[k] = v * v;
    }
    exact_add_rows(part, squares, kLanes, static_cast<int>(rows), kLanes);
    i += rows * kLanes;
  }
  for (; i < n; ++i) {
    const double v = static_cast<double>(x[i]);
    exact_add(s, v * v);
  }
  for (const ExactSum& p : part) exact_merge(s, p);
}

template void exact_add<float>(ExactSum*, const float*, size_t);
template void exact_add<double>(ExactSum*, const double*, size_t);
template void exact_add_rows<float>(ExactSum*, const float*, size_t, int, size_t);
template void exact_add_rows<double>(ExactSum*, const double*, size_t, int, size_t);
template void exact_round<float>(float*, const ExactSum*, size_t);
template void exact_round<double>(double*, const ExactSum*, size_t);
template void exact_add_squares<float>(ExactSum&, const float*, size_t);
template void exact_add_squares<double>(ExactSum&, const double*, size_t);
template float exact_value_reference<float>(const ExactSum&);
template double exact_value_reference<double>(const ExactSum&);

}  // namespace shardlab
