// An order-free sum of floating-point numbers (the exact mode, --exact): the same terms give the same bits whatever
// their order, grouping or split over ranks — so every layout that adds the same terms agrees to the last bit.
//
// How: the exponent range is cut into fixed bins of 32 bits (bin j holds the bit positions [32j − 1088, 32j − 1056)
// of a double's value). A sum keeps the 3 bins from the highest one any of its terms reached (`top`) downwards, each
// an int64 that adds the parts of the terms falling in that bin — integers, so in any order, and a bin never carries
// into the next. A term is split at the fixed bin boundaries (exact); its bits below the lowest kept bin are dropped
// (truncated toward zero). When a larger term arrives the window moves up and the lowest bins are dropped whole: the
// result only ever depends on which bins the largest term makes the window keep, never on when the terms came.
// The value, Σ bin·2^(its position), is rounded once to the floating type. Precision: at least 64 bits below the
// largest term's leading bit are kept (a double has 53), so on sums without heavy cancellation this is the exact sum
// rounded once. (Ideas from Demmel & Nguyen's reproducible summation, ReproBLAS; this is a plain integer version.)
// Limits: up to 2^30 terms per sum (a bin then stays below 2^62, the value below 2^127); a NaN or infinite term
// makes the sum NaN. Results that fall in the subnormal range are rounded twice (to the type, then by the scaling).
#pragma once
#include <cstddef>
#include <cstdint>

namespace shardlab {

struct ExactSum {
  static constexpr int32_t kEmpty = -1;              // no terms yet (the value 0)
  static constexpr int32_t kNotFinite = 0x7fffffff;  // a NaN or infinite term was added: the value is NaN
  static constexpr int64_t kMaxTerms = int64_t(1) << 30;
  int32_t top = kEmpty;        // the highest bin kept
  int32_t terms = 0;           // terms deposited (all sums merged into it included), ≤ kMaxTerms
  int64_t bin[3] = {0, 0, 0};  // bins top, top − 1, top − 2, in units of their lowest bit
};
static_assert(sizeof(ExactSum) == 32, "ExactSum travels as 32 bytes");

// acc += x. Throws std::overflow_error past kMaxTerms terms.
void exact_add(ExactSum& acc, double x);
// acc += other: the same result as adding other's terms one by one to acc.
void exact_merge(ExactSum& acc, const ExactSum& other);
// The value, rounded once to double / float (0 when empty, NaN when a term was not finite).
double exact_value(const ExactSum& s);
float exact_value_float(const ExactSum& s);

// Element-wise over arrays: acc[i] += x[i]; acc[i] += other[i]; out[i] = the value of acc[i] in T.
template <class T>
void exact_add(ExactSum* acc, const T* x, size_t n);
// acc[i] += x[g·stride + i] for g = 0 … count − 1, in that order: `count` arrays in one pass over acc (the sums are
// 32 bytes each, so one pass instead of `count` is what keeps this from waiting on memory).
template <class T>
void exact_add_rows(ExactSum* acc, const T* x, size_t n, int count, size_t stride);
void exact_merge(ExactSum* acc, const ExactSum* other, size_t n);
// acc += x[i]² for i < n, each squared in double: the bits of exact_add(acc, double(x[i]) · double(x[i])) in turn.
template <class T>
void exact_add_squares(ExactSum& acc, const T* x, size_t n);
template <class T>
void exact_round(T* out, const ExactSum* acc, size_t n);

// The value the plain way (one 128-bit integer, its leading 64 bits converted): the reference the unit tests hold
// exact_value, exact_value_float and exact_round to, bit for bit.
template <class T>
T exact_value_reference(const ExactSum& s);

}  // namespace shardlab
