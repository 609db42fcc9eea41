// Dropout whose mask is a pure function of (seed, site, step, layer, global element index), so it
// is never stored: forward and backward regenerate it, and any layout (a DP shard, a micro-batch,
// a pipeline stage, a tensor-parallel head slice, a sequence slice) draws the same mask for the same
// global element. Inverted scaling: kept elements are multiplied by 1/(1-p). Sites: "dropout:attn"
// (attention probs), "dropout:proj" (after W^O), "dropout:mlp" (after the MLP).
// Global indices: attention probability (sample n, head h, query i, key j) is counter
// ((n·NH + h)·T + i)·T + j; activation (sample n, position t, channel c) is (n·T + t)·C + c, with n, h
// and t GLOBAL — a block that holds heads [h0, …) or positions [t0, …) passes h0 and t0 here.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/rng.h"

namespace shardlab {

struct Dropout {
  double p = 0.0;
  RngStream rng{0};
  uint64_t first_sample = 0;  // global index of this micro-batch's first sample within the step
  int T = 0, C = 0, NH = 0;   // GLOBAL sequence length, hidden size and head count
  int first_head = 0;         // global index of this block's head 0
  int first_position = 0;     // global position of this block's residual row 0 (a sequence slice)

  static Dropout make(double p, uint64_t seed, const char* site, uint64_t step, int layer, uint64_t first_sample, int T,
                      int C, int NH, int first_head = 0, int first_position = 0) {
    return Dropout{p,
                   rng_stream(seed, site, step, static_cast<uint64_t>(layer)),
                   first_sample,
                   T,
                   C,
                   NH,
                   first_head,
                   first_position};
  }
  bool active() const { return p > 0.0; }
  // Counter of element e of attention probs (b, h, ·, ·): local sample b, local head h.
  uint64_t attention_index(int b, int h, size_t e) const {
    return ((first_sample + b) * NH + first_head + h) * static_cast<uint64_t>(T) * T + e;
  }
  // Counter of the first element of local sample b's first residual row.
  uint64_t activation_index(int b) const {
    return ((first_sample + b) * static_cast<uint64_t>(T) + first_position) * C;
  }

  // out[i] = in[i]·mask(first + i)/(1-p); in-place allowed. The same call masks a gradient in backward.
  template <class Tp>
  void apply(Tp* out, const Tp* in, size_t n, uint64_t first) const {
    const Tp scale = Tp(1.0 / (1.0 - p));
    for (size_t i = 0; i < n; ++i) out[i] = rng.uniform(first + i) < p ? Tp(0) : in[i] * scale;
  }
  // A (B, rows, C) activation of a micro-batch: rows positions per sample, from first_position on
  // (rows = T when the block holds the whole sequence).
  template <class Tp>
  void apply_activation(Tp* x, int B, int rows) const {
    const size_t n = static_cast<size_t>(rows) * C;
    for (int b = 0; b < B; ++b) apply(x + b * n, x + b * n, n, activation_index(b));
  }
  template <class Tp>
  void apply_activation(Tp* x, int B) const {
    apply_activation(x, B, T);
  }
};

}  // namespace shardlab
