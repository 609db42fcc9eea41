// The data-parallel strategies' names and what each shards (see strategy.h).
#include "optim/strategy.h"

namespace shardlab {

namespace {
struct Names {
  const char* name;
  const char* label;
  const char* fsdp;
};
const Names kNames[kNumStrategies] = {{"dp", "DP", "no_shard"},
                                      {"zero1", "ZeRO-1", ""},
                                      {"zero2", "ZeRO-2", "grad_op"},
                                      {"zero3", "ZeRO-3", "full"},
                                      {"hybrid", "FSDP hybrid", "hybrid"}};
const Names& names(Strategy s) { return kNames[static_cast<int>(s)]; }
}  // namespace

const char* strategy_name(Strategy s) { return names(s).name; }
const char* strategy_label(Strategy s) { return names(s).label; }
const char* fsdp_name(Strategy s) { return names(s).fsdp; }

bool parse_strategy(const std::string& s, Strategy* out) {
  for (int i = 0; i < kNumStrategies; ++i)
    if (s == kNames[i].name) {
      *out = strategy_at(i);
      return true;
    }
  return false;
}

bool parse_zero_stage(const std::string& s, Strategy* out) {
  if (s.size() != 1 || s[0] < '0' || s[0] > '3') return false;
  *out = strategy_at(s[0] - '0');  // 0 → dp, 1..3 → zero1..zero3
  return true;
}

bool parse_fsdp(const std::string& s, Strategy* out) {
  // claim C14: NO_SHARD = DDP, SHARD_GRAD_OP = ZeRO-2, FULL_SHARD = ZeRO-3, HYBRID_SHARD.
  for (int i = 0; i < kNumStrategies; ++i)
    if (*kNames[i].fsdp && s == kNames[i].fsdp) {
      *out = strategy_at(i);
      return true;
    }
  return false;
}

bool is_sharded(Strategy s, Mem c) {
  const bool optimizer_state = c == Mem::master || c == Mem::adam_m || c == Mem::adam_v || c == Mem::momentum;
  switch (s) {
    case Strategy::dp: return false;  // claim C11: DP replicates all 16Ψ
    case Strategy::zero1: return optimizer_state;
    case Strategy::zero2: return optimizer_state || c == Mem::grad;
    case Strategy::zero3:
    case Strategy::hybrid: return optimizer_state || c == Mem::grad || c == Mem::param;
  }
  return false;
}

}  // namespace shardlab
