// plan/memory_need.h — the bytes one rank of a training run will allocate, estimated before anything is
// allocated, so an impossible size is refused up front instead of being killed by the kernel:
// model states (exact: plan/sharding.h), the activation peak of one micro-batch at a time (exact:
// plan/activation_items.h) and the workspace of the trainer's buffers (a chunk's compute buffers, the f32
// copies of bf16 states, ZeRO-3's gathered units, ring buffers). The ledger measures the same categories.
//
// With context parallelism a rank holds s/c tokens of every sample: its activations and compute buffers count
// them, and ring attention's buffers are added (plan/cp_bytes.h); the model states are sharded over the
// gradient group, dp × cp (the caller gives layout.dp = dp·c).
//
// With experts (gpt.moe, claim C25) a MoE block holds the router and E/ep experts in place of the MLP, and keeps the
// router's arrays and its rows on the experts' side at an even load (n = m = s·b·k per micro-batch: exact dropless
// on one process; with --ep or a capacity the run's routing decides, which no estimate knows).
//
// Leaves out: the data file and process overhead (libraries, MPI), which the caller adds, and allocator
// overhead (fragmentation): an estimate, not a measurement.
#pragma once

#include <cstdint>

#include "model/activation_policy.h"
#include "plan/sharding.h"
#include "plan/state_bytes.h"

namespace shardlab::plan {

struct RunShape {
  GptDims gpt;                    // V, T, C, L
  std::uint64_t heads = 4;        // NH
  std::uint64_t micro_batch = 1;  // B
  Recipe recipe;
  Layout layout;  // data parallel: strategy, N (the gradient group: dp·c with context parallelism)
  AttentionKernel attention = AttentionKernel::naive;
  Recompute recompute = Recompute::none;
  std::uint64_t tp = 1;  // tensor-parallel ranks: the rank holds Ψ_t and its slice of the activations
  bool sequence_parallel = false;
  std::uint64_t cp = 1;  // context-parallel ranks: the rank holds s/c tokens of every sample
  std::uint64_t ep = 1;  // expert-parallel ranks: a MoE block (gpt.moe) holds E/ep experts
  // Pipeline: the stage with the most blocks holds `stage_blocks` of them (and, at worst, the embedding and
  // the head) and keeps up to `stash` micro-batches of activations alive (GPipe m, 1F1B ≤ p).
  std::uint64_t pp = 1, stage_blocks = 0, stash = 1;
};

struct MemoryNeed {
  long double model_states = 0, activations = 0, workspace = 0;
  long double total() const { return model_states + activations + workspace; }
};

// Bytes per rank (long double: absurd sizes stay representable, so they can be refused).
MemoryNeed rank_memory_need(const RunShape& run);

}  // namespace shardlab::plan
