// report/sharding_report.h — the data-parallel part of `shardlab plan` (§2.4.3–2.4.5): per-rank model
// states of the chosen strategy by category, DP / ZeRO-1 / ZeRO-2 / ZeRO-3 side by side at this N
// (bytes per rank, N → ∞ floors, comm per step, × DP, time at both bandwidths), the chosen strategy's
// ring phases and intra/inter-node split, the chapter's DP all-reduce numbers (claim C8), and the
// reminder that activations and model FLOPs do not change (claim C16).
//
// Leaves out: overlap of communication with compute (claims C9, C15), latency, and TP/PP layouts.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

#include "plan/activations.h"
#include "plan/sharding.h"
#include "plan/state_bytes.h"

namespace shardlab::plan {

struct ShardingRequest {
  Layout layout;
  std::string chosen_by = "--zero 0";  // how the strategy was asked for, e.g. "--fsdp full"
  bool nodes_given = false;            // K came from --ranks-per-node or a preset default
  double intra_gbps = 300;             // claim C8's fast link (NVLink-class)
  double inter_gbps = 25;              // claim C8's slow link (inter-node)
};

void print_sharding(std::ostream& out, const Recipe& r, std::uint64_t psi, const ShardingRequest& q,
                    const ActivationDims& act, AttentionKernel attention);

}  // namespace shardlab::plan
