// The FLOP counter: every GEMM (core/gemm.h) adds the 2·M·N·K floating-point operations it executes to
// the phase the model is in — a block's forward, backward or recompute, or the rest (embedding, head) —
// so recompute's extra work (claims C27, C28) is measured, not assumed. Causal attention counts only the
// blocks it really multiplies. One counter per process: the one piece of global state in core/, like a
// hardware performance counter; FlopPhase sets the phase for a scope. Leaves out: elementwise work
// (softmax, LayerNorm, GELU), which the chapter's FLOP counts leave out too.
#pragma once
#include <cstdint>

namespace shardlab {

enum class Flop { block_forward, block_backward, block_recompute, other, count };

struct FlopCounter {
  double flops[static_cast<int>(Flop::count)] = {};
  Flop phase = Flop::other;
  double attention = 0;       // of those, the attention core's (Q·Kᵀ, P·V and their backward), whatever the phase
  bool in_attention = false;  // inside AttentionFlops
  double operator[](Flop f) const { return flops[static_cast<int>(f)]; }
};

inline FlopCounter& flop_counter() {
  thread_local FlopCounter c;
  return c;
}

// Sets the phase for its lifetime and restores the previous one.
class FlopPhase {
 public:
  explicit FlopPhase(Flop p) : saved_(flop_counter().phase) { flop_counter().phase = p; }
  ~FlopPhase() { flop_counter().phase = saved_; }
  FlopPhase(const FlopPhase&) = delete;
  FlopPhase& operator=(const FlopPhase&) = delete;

 private:
  Flop saved_;
};

// Marks a scope as the attention core: its FLOPs count in their phase and in FlopCounter::attention too (how
// context parallelism's splits share the work, claim C24).
class AttentionFlops {
 public:
  AttentionFlops() : saved_(flop_counter().in_attention) { flop_counter().in_attention = true; }
  ~AttentionFlops() { flop_counter().in_attention = saved_; }
  AttentionFlops(const AttentionFlops&) = delete;
  AttentionFlops& operator=(const AttentionFlops&) = delete;

 private:
  bool saved_;
};

inline void count_flops(double n) {
  FlopCounter& c = flop_counter();
  c.flops[static_cast<int>(c.phase)] += n;
  if (c.in_attention) c.attention += n;
}

}  // namespace shardlab
