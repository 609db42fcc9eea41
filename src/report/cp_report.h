// report/cp_report.h — the context-parallel section of `shardlab plan --cp c [--cp-split zigzag|contiguous]`
// (claim C24): which tokens each rank holds, C24's statements each beside its number — ring attention's bytes
// per layer and micro-batch and per step (plan/cp_bytes.h), the exact merge and what it keeps, the compute a
// visiting block brings per byte (what lets the transfer hide) — the chapter's activations per rank ÷ c, the
// causal work per rank of both splits, and the ring's buffers. The itemised activations of one cp rank are
// printed by plan_report with the same c.
#pragma once

#include <cstdint>
#include <iosfwd>

#include "model/activation_policy.h"
#include "model/token_positions.h"
#include "plan/activations.h"
#include "plan/state_bytes.h"

namespace shardlab::plan {

struct CpRequest {
  std::uint64_t cp = 1;
  ContextSplit split = ContextSplit::zigzag;
  std::uint64_t accum = 1;           // A: micro-batches per step (--micro-batches with --pp, --accum with --dp)
  std::uint64_t tp = 1;              // heads over tp, tokens over cp
  std::uint64_t blocks = 0;          // L: a rank's blocks (with --pp the largest stage's; 0: every layer)
  bool attention_defaulted = false;  // --attention was not given: ring attention is flash's
  bool exact = false;                // --exact: no ring; whole samples per cp rank inside the regions
};

void print_context_parallel(std::ostream& out, const CpRequest& q, const Recipe& recipe, const ActivationDims& act,
                            Recompute recompute);

}  // namespace shardlab::plan
