// bf16 as a storage format: uint16 holding the top half of an IEEE float, rounded to nearest even.
// Never a compute type: values are widened to float at the edges, computed on, and rounded back.
// bf16 keeps 8 exponent bits and 7 mantissa bits, so w + u rounds back to w whenever |u| is below half
// the bf16 spacing at w: always when |u| < |w|/2^9, never when |u| > |w|/2^8 (claim C2).
#pragma once
#include <cstdint>
#include <cstring>

namespace shardlab {

using bf16 = uint16_t;

inline bf16 to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<bf16>((u >> 16) | 0x40);  // NaN stays NaN (quiet)
  u += 0x7fffu + ((u >> 16) & 1u);                                                  // round to nearest, ties to even
  return static_cast<bf16>(u >> 16);
}

inline float from_bf16(bf16 h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline float round_bf16(float f) { return from_bf16(to_bf16(f)); }

}  // namespace shardlab
