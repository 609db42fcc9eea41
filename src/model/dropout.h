// Dropout whose mask is a pure function of (seed, site, step, layer, global element index), so it
// is never stored: forward and backward regenerate it, and any layout (a DP shard, a micro-batch,
// a pipeline stage, a tensor-parallel head slice, a sequence slice) draws the same mask for the same
// global element. Inverted scaling: kept elements are multiplied by 1/(1-p). Sites: "dropout:attn"
// (attention probs), "dropout:proj" (after W^O), "dropout:mlp" (after the MLP).
// Global indices: attention probability (sample n, head h, query i, key j) is counter
// ((n·NH + h)·T + i)·T + j; activation (sample n, position t, channel c) is (n·T + t)·C + c, with n, h
// and t GLOBAL — a block that holds heads [h0, …) or rows [t0, …) of the sequence passes h0 and t0 here; under
// context parallelism it also passes its tokens' positions (token_positions.h), and row t is position pos.at(t).
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/rng.h"
#include "model/token_positions.h"

namespace shardlab {

struct Dropout {
  double p = 0.0;
  RngStream rng{0};
  uint64_t first_sample = 0;  // global index of this micro-batch's first sample within the step
  int T = 0, C = 0, NH = 0;   // GLOBAL sequence length, hidden size and head count
  int first_head = 0;         // global index of this block's head 0
  int first_row = 0;          // which row of the sequence this block's residual row 0 is (a sequence slice)
  TokenPositions pos;         // the global position of each row of the sequence (run 0: row t is position t)

  static Dropout make(double p, uint64_t seed, const char* site, uint64_t step, int layer, uint64_t first_sample, int T,
                      int C, int NH, int first_head = 0, int first_row = 0, TokenPositions pos = {}) {
    return Dropout{
        p,  rng_stream(seed, site, step, static_cast<uint64_t>(layer)), first_sample, T, C, NH, first_head, first_row,
        pos};
  }
  int position(int row) const { return pos.run ? pos.at(row) : row; }  // the global position of a row
  bool active() const { return p > 0.0; }
  // Counter of element e of attention probs (b, h, ·, ·): local sample b, local head h.
  uint64_t attention_index(int b, int h, size_t e) const {
    return ((first_sample + b) * NH + first_head + h) * static_cast<uint64_t>(T) * T + e;
  }
  // Counter of the first element of local sample b's residual row i.
  uint64_t activation_index(int b, int i = 0) const {
    return ((first_sample + b) * static_cast<uint64_t>(T) + position(first_row + i)) * C;
  }

  // out[i] = in[i]·mask(first + i)/(1-p); in-place allowed. The same call masks a gradient in backward.
  template <class Tp>
  void apply(Tp* out, const Tp* in, size_t n, uint64_t first) const {
    const Tp scale = Tp(1.0 / (1.0 - p));
    for (size_t i = 0; i < n; ++i) out[i] = rng.uniform(first + i) < p ? Tp(0) : in[i] * scale;
  }
  // A (B, rows, C) activation of a micro-batch: rows rows per sample, from first_row on (rows = T when the
  // block holds the whole sequence). Rows at consecutive positions draw one run of counters.
  template <class Tp>
  void apply_activation(Tp* x, int B, int rows) const {
    for (int b = 0; b < B; ++b)
      for (int i = 0; i < rows;) {
        int n = 1;  // rows i … i+n-1 sit at consecutive positions
        while (i + n < rows && position(first_row + i + n) == position(first_row + i) + n) ++n;
        Tp* at = x + (static_cast<size_t>(b) * rows + i) * C;
        apply(at, at, static_cast<size_t>(n) * C, activation_index(b, i));
        i += n;
      }
  }
  template <class Tp>
  void apply_activation(Tp* x, int B) const {
    apply_activation(x, B, T);
  }
};

}  // namespace shardlab
