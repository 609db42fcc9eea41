// Counter-based randomness: every random number is a pure function of (seed, what, index).
// Weight i of tensor t, sample k of step n, dropout element j of layer l — each can be generated
// alone, by whichever rank owns it, and equals the same element generated as part of the whole.
// This is what makes every parallel layout see the same model, data and dropout.
// Leaves out: speed tricks (a vectorised Philox); two splitmix64 rounds per number are enough here.
#pragma once
#include <cmath>
#include <cstdint>
#include <string_view>

namespace shardlab {

inline uint64_t mix64(uint64_t z) {  // splitmix64 finaliser: a bijective avalanche of 64 bits
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

inline uint64_t hash_name(std::string_view s) {  // FNV-1a, then mixed
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return mix64(h);
}

// A named stream of random numbers: rng_stream(seed, "dropout", step, layer).uniform(index).
// Use one stream per kind of draw: normal(i) reads counters 2i and 2i+1, which uniform/below share.
struct RngStream {
  uint64_t key;
  uint64_t bits(uint64_t i) const { return mix64(key ^ mix64(i)); }
  // Uniform in [0, 1) with 53 random bits.
  double uniform(uint64_t i) const { return static_cast<double>(bits(i) >> 11) * 0x1.0p-53; }
  // Uniform integer in [0, n) (n > 0); the modulo bias is below 2^-40 for n < 2^24.
  uint64_t below(uint64_t i, uint64_t n) const { return bits(i) % n; }
  // Standard normal by Box-Muller from two uniforms at counters 2i, 2i+1.
  double normal(uint64_t i) const {
    double u1 = (static_cast<double>(bits(2 * i) >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]
    double u2 = uniform(2 * i + 1);
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586476925 * u2);
  }
};

inline RngStream rng_stream(uint64_t seed, std::string_view what, uint64_t a = 0, uint64_t b = 0, uint64_t c = 0) {
  return RngStream{mix64(seed ^ mix64(hash_name(what) ^ mix64(a ^ mix64(b ^ mix64(c)))))};
}

}  // namespace shardlab
