// plan/exact_cp_bytes.h — context parallelism's messages in the exact mode (--exact --cp c,
// parallel/exact_context_parallel.h): no ring; each tensor-parallel region runs b/c whole samples per cp rank, and
// every entry into a region gathers their rows, every exit sends the results home — one all-to-all over cp of a
// (b, s/c, h) slice each (purpose "exact_rows"), of which a rank sends the (c−1)/c that other ranks run.
//
// Legend as plan/cp_bytes.h: c, b, s, h, L blocks this rank runs, A micro-batches per step, e the compute type's bytes.
//   one all-to-all        sends and receives (c−1)·(b/c)·(s/c)·h elements; books 2·b·(s/c)·h (its own part too)
//   per block             forward 4 (enter and leave, attention and MLP); backward 6 (the output gradient's rows
//                         and the input's rows again for the weight gradients, the input gradient home, twice);
//                         + 4 with --recompute full (the block's forward again)
//   the head (last stage) forward 1 (the final LayerNorm's rows); backward 2 (its rows again, the gradient home)
//   per step              A·(L·(10 + 4·full) + 3·head) all-to-alls
//   buffers               comm_buffer: 4 × b·(s/c)·h·e (gathered inputs, gathered gradients, rounded sums, packing)
// Leaves out: evaluation's all-to-alls (comm_eval); the tp, dp and loss sums (their own formulas).
#pragma once

#include <cstdint>

#include "plan/cp_bytes.h"

namespace shardlab::plan {

struct ExactCpStep {
  std::uint64_t per_block = 0;      // all-to-alls per block and micro-batch: 10, or 14 with full recompute
  std::uint64_t calls = 0;          // all-to-alls per step
  std::uint64_t call_elements = 0;  // booked per call: 2·b·(s/c)·h
  std::uint64_t sent_per_call = 0;  // bytes sent (= received) per call: (c−1)·(b/c)·(s/c)·h·e
  std::uint64_t sent() const { return calls * sent_per_call; }
};

// head: this rank runs the LM head (the last pipeline stage).
inline ExactCpStep exact_cp_step(const CpShape& s, bool head) {
  ExactCpStep t;
  if (s.cp <= 1) return t;
  const std::uint64_t Tc = s.seq / s.cp;
  t.per_block = 10 + (s.recompute == Recompute::full ? 4 : 0);
  t.calls = s.accum * (s.blocks * t.per_block + (head ? 3 : 0));
  t.call_elements = 2 * s.micro_batch * Tc * s.hidden;
  t.sent_per_call = (s.cp - 1) * (s.micro_batch / s.cp) * Tc * s.hidden * s.elem_bytes;
  return t;
}

inline std::uint64_t exact_cp_comm_buffer(const CpShape& s, std::uint64_t capacity) {
  return s.cp <= 1 ? 0 : 4 * capacity * (s.seq / s.cp) * s.hidden * s.elem_bytes;
}

}  // namespace shardlab::plan
