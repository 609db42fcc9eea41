// check/moe_rank_check.h — the mixture-of-experts parts of `plan --ledger` (claim C25), as ledger_check.cpp calls
// them: the ledger's "moe" section read into the check (the experts' shape, the capacity, whether the rows come from
// the run), and one rank's experts checked — its expert parameters, its recorded rows (dropless on one process they
// must be the formula's s·b·k), its activations with each MoE record sized by them (check/activation_check.h), its
// all-to-alls on axis ep (check/moe_check.h) and, with expert parallelism, the dp axis's gradient all-reduces
// range by range (plan/ep_bytes.h: dense over dp·ep, experts over dp).
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "check/ledger_check.h"

namespace shardlab::plan {

// Reads j["moe"] into c->activation_shape.moe, c->moe_capacity and c->moe_rows_recorded. Throws one sentence when the
// section is missing where the layout needs it, or describes a run no trainer makes.
void read_moe_section(const nlohmann::json& j, LedgerCheck* c);

// The dp axis's gradient all-reduces of one step under expert parallelism (c.ep > 1, the plain DP strategy): the bytes
// rank rc.rank (of rc.psi parameters) sends, by link kind — dense runs over dp·ep, expert runs over dp, in the engine's
// buckets (plan/ep_bytes.h ep_grad_ranges). held: the units the rank's stage holds (empty: all).
LinkBytes ep_grad_step_bytes(const LedgerCheck& c, const std::vector<bool>& held, const RankCheck& rc);
// ZeRO/FSDP with experts (parallel/across_ep.cpp): the strategy's dp rings over dp × cp for gradient-group member
// rc.grad_member, plus one all-reduce over ep (member rc.ep_rank) of its shard of the dense gradients per step, of
// elem_bytes each, added to all_reduce.intra.
StepComm ep_sharded_step_bytes(const LedgerCheck& c, const std::vector<bool>& held, const RankCheck& rc,
                               std::uint64_t elem_bytes);

// held: the units the rank's stage holds (empty: all).
void check_moe_rank(const nlohmann::json& rank, const LedgerCheck& c, const std::vector<bool>& held, RankCheck* rc);

}  // namespace shardlab::plan
