// The data-parallel strategies (claims C11–C14), one description shared by the engine that runs them
// (parallel/data_parallel.h) and the planner that predicts them (plan/): what each one shards.
//   dp      replicate every model state (C11; FSDP NO_SHARD)
//   zero1   shard the optimizer states: master, adam_m, adam_v, momentum (C12)
//   zero2   + the gradients (FSDP SHARD_GRAD_OP)
//   zero3   + the parameters (FSDP FULL_SHARD, C14)
//   hybrid  zero3 inside a node, replicated across nodes (FSDP HYBRID_SHARD)
// Shards follow the geometry of optim/shard_layout.h.
#pragma once
#include <optional>
#include <string>

#include "core/ledger.h"
#include "core/spelling.h"

namespace shardlab {

enum class Strategy { dp, zero1, zero2, zero3, hybrid };
constexpr int kNumStrategies = 5;
inline Strategy strategy_at(int i) { return static_cast<Strategy>(i); }

const char* strategy_name(Strategy s);                       // "dp", "zero1", …, "hybrid" (ledger.json's spelling)
const char* strategy_label(Strategy s);                      // "DP", "ZeRO-1", …, "FSDP hybrid"
const char* fsdp_name(Strategy s);                           // "no_shard", "", "grad_op", "full", "hybrid"
bool parse_strategy(const std::string& s, Strategy* out);    // dp | zero1 | zero2 | zero3 | hybrid
bool parse_zero_stage(const std::string& s, Strategy* out);  // --zero 0 | 1 | 2 | 3
bool parse_fsdp(const std::string& s, Strategy* out);        // --fsdp no_shard | grad_op | full | hybrid
// The trainer's --fsdp: none (the strategy is --zero's), or the FSDP name of a strategy (claim C14).
inline constexpr Spelling<std::optional<Strategy>> kFsdpWords[] = {{"none", std::nullopt},
                                                                   {"full", Strategy::zero3},
                                                                   {"grad_op", Strategy::zero2},
                                                                   {"no_shard", Strategy::dp},
                                                                   {"hybrid", Strategy::hybrid}};

// Does the strategy split this model-state category into shards? (Not: activation, comm_buffer, workspace.)
bool is_sharded(Strategy s, Mem category);

}  // namespace shardlab
