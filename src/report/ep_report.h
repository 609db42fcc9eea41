// report/ep_report.h — the expert-parallel section of `shardlab plan --ep e --moe-experts E …` (claim C25): C25's
// four statements each beside its number — which experts a rank holds and its parameters and model states (the
// whole model's, the parameters a token uses), the two all-to-alls of every MoE layer at an even load
// (plan/ep_bytes.h), forward and backward, per layer and micro-batch and per step, what an uneven load costs and
// what the load-balancing loss does. With --preset 7b the model is a 7B-class MoE, Mixtral-8x7B-like, beside
// Mixtral's own totals.
#pragma once

#include <cstdint>
#include <iosfwd>

#include "optim/strategy.h"
#include "plan/state_bytes.h"

namespace shardlab::plan {

struct EpRequest {
  std::uint64_t ep = 1;                     // e
  GptDims gpt;                              // the model, with its experts (gpt.moe)
  std::uint64_t seq = 64, micro_batch = 1;  // s, b of a micro-batch
  std::uint64_t accum = 1;                  // A: micro-batches per step (--accum with --dp, --micro-batches with --pp)
  std::uint64_t dp = 1;                     // the dp ranks holding the same experts (their gradients' group)
  Strategy strategy = Strategy::dp;         // --zero / --fsdp: shard over those dp ranks (parallel/across_ep.cpp)
  bool exact = false;                       // --exact: the gradients travel as 32-byte order-free sums
  bool mixtral = false;                     // --preset 7b: the Mixtral-8x7B-like example
};

// The Mixtral-8x7B-like model in this trainer's GPT (s: the sequence of the activations).
GptDims mixtral_like(std::uint64_t seq);

void print_expert_parallel(std::ostream& out, const EpRequest& q, const Recipe& recipe);

}  // namespace shardlab::plan
