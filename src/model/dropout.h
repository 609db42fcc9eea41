// Dropout whose mask is a pure function of (seed, site, step, layer, global element index), so it
// is never stored: forward and backward regenerate it, and any layout (a DP shard, a micro-batch,
// a pipeline stage) draws the same mask for the same global sample. Inverted scaling: kept
// elements are multiplied by 1/(1-p). Sites: "dropout:attn" (attention probs), "dropout:proj"
// (after W^O), "dropout:mlp" (after the MLP).
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/rng.h"

namespace shardlab {

struct Dropout {
  double p = 0.0;
  RngStream rng{0};
  uint64_t first_sample = 0;  // global index of this micro-batch's first sample within the step
  int T = 0, C = 0, NH = 0;

  static Dropout make(double p, uint64_t seed, const char* site, uint64_t step, int layer, uint64_t first_sample, int T,
                      int C, int NH) {
    return Dropout{p, rng_stream(seed, site, step, static_cast<uint64_t>(layer)), first_sample, T, C, NH};
  }
  bool active() const { return p > 0.0; }
  // Counter of element e of attention probs (b, h, ·, ·) of the micro-batch's local sample b.
  uint64_t attention_index(int b, int h, size_t e) const {
    return ((first_sample + b) * NH + h) * static_cast<uint64_t>(T) * T + e;
  }
  // Counter of the first element of sample b's (T, C) activation.
  uint64_t activation_index(int b) const { return (first_sample + b) * static_cast<uint64_t>(T) * C; }

  // out[i] = in[i]·mask(first + i)/(1-p); in-place allowed. The same call masks a gradient in backward.
  template <class Tp>
  void apply(Tp* out, const Tp* in, size_t n, uint64_t first) const {
    const Tp scale = Tp(1.0 / (1.0 - p));
    for (size_t i = 0; i < n; ++i) out[i] = rng.uniform(first + i) < p ? Tp(0) : in[i] * scale;
  }
  // Whole (B, T, C) activation of a micro-batch.
  template <class Tp>
  void apply_activation(Tp* x, int B) const {
    const size_t n = static_cast<size_t>(T) * C;
    for (int b = 0; b < B; ++b) apply(x + b * n, x + b * n, n, activation_index(b));
  }
};

}  // namespace shardlab
