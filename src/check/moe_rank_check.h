// check/moe_rank_check.h — the mixture-of-experts parts of `plan --ledger` (claim C25), as ledger_check.cpp calls
// them: the ledger's "moe" section read into the check (the experts' shape, the capacity, whether the rows come from
// the run), and one rank's experts checked — its expert parameters, its recorded rows (dropless on one process they
// must be the formula's s·b·k), its activations with each MoE record sized by them (check/activation_check.h), its
// all-to-alls on axis ep (check/moe_check.h) and, with expert parallelism, the dp axis's gradient all-reduces
// range by range (plan/ep_bytes.h: dense over dp·ep, experts over dp).
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "check/ledger_check.h"

namespace shardlab::plan {

// Reads j["moe"] into c->activation_shape.moe, c->moe_capacity and c->moe_rows_recorded. Throws one sentence when the
// section is missing where the layout needs it, or describes a run no trainer makes.
void read_moe_section(const nlohmann::json& j, LedgerCheck* c);

// held: the units the rank's stage holds (empty: all).
void check_moe_rank(const nlohmann::json& rank, const LedgerCheck& c, const std::vector<bool>& held, RankCheck* rc);

}  // namespace shardlab::plan
