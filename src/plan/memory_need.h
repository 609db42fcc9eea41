// plan/memory_need.h — the bytes one rank of a training run will allocate, estimated before anything is
// allocated, so an impossible size is refused up front instead of being killed by the kernel:
// model states (exact: plan/sharding.h), the activations one micro-batch keeps for backward and the
// workspace of the trainer's buffers (backward scratch, the f32 copies of bf16 states, ZeRO-3's gathered
// units, ring buffers). The trainer's memory ledger measures the same categories.
//
// Leaves out: the data file and process overhead (libraries, MPI), which the caller adds, and allocator
// overhead (fragmentation): an estimate, not a measurement.
#pragma once

#include <cstdint>

#include "plan/model_states.h"
#include "plan/sharding.h"

namespace shardlab::plan {

struct RunShape {
  GptDims gpt;                    // V, T, C, L
  std::uint64_t heads = 4;        // NH
  std::uint64_t micro_batch = 1;  // B
  Recipe recipe;
  Layout layout;  // data parallel: strategy, N
};

struct MemoryNeed {
  long double model_states = 0, activations = 0, workspace = 0;
  long double total() const { return model_states + activations + workspace; }
};

// Bytes per rank (long double: absurd sizes stay representable, so they can be refused).
MemoryNeed rank_memory_need(const RunShape& run);

}  // namespace shardlab::plan
