// check/activation_check.h — one rank's saved activations in a trainer's ledger.json against the itemised formulas,
// exactly: every item's bytes per layer and micro-batch and its allocations (plan/activation_items.h), and the
// activation peak its stage's schedule leaves (plan/pipeline_stages.h).
//
// With experts (claim C25; plan/moe_items.h) a MoE block's record differs from micro-batch to micro-batch: every item
// is then compared over the whole run — its allocations, the bytes they add up to, its own peak — and the activation
// peak is the schedule's walk with each record its own size, step by step, and each evaluation forward's (the
// category's peak counts evaluation's records too; the items do not). The rows come from the run's recorded routing
// (check/moe_check.h), or, dropless on one process, from the formula s·b·k.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "check/ledger_check.h"
#include "check/moe_check.h"
#include "plan/pipeline_stages.h"

namespace shardlab::plan {

// The layout's stage shape (the model, tp, pp and its layers, cp, the experts and ep).
StageShape stage_shape(const LedgerCheck& c);

// The rank's stage: its blocks, whether it holds the head, and the activation peak its schedule leaves.
struct StageFacts {
  std::uint64_t blocks = 0;
  bool head = true;
  std::uint64_t peak = 0;
};
StageFacts stage_facts(const LedgerCheck& c, int stage);

// Dense models: every item per layer and micro-batch, `micro_batches` forwards of each block.
void check_activations(const nlohmann::json& rank, const LedgerCheck& c, std::uint64_t micro_batches,
                       const StageFacts& st, RankCheck* rc);
// With experts: rows, one entry per chunk of the rank's stage (read_moe_rows).
void check_moe_activations(const nlohmann::json& rank, const LedgerCheck& c, const std::vector<ChunkRows>& rows,
                           RankCheck* rc);

}  // namespace shardlab::plan
