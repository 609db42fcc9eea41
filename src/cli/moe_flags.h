// cli/moe_flags.h — the model's experts on plan's command lines (claim C25): --moe-experts E, --moe-top-k k,
// --moe-every n and --moe-ffn F, defined once and checked by one rule set for `plan` and `plan --search`:
// 1 ≤ E ≤ 4096, 1 ≤ k ≤ E, 1 ≤ n ≤ L, F ≤ 2²⁴ (0: 4·hidden), the other three only with --moe-experts, and none
// with a preset (it fixes the model). Leaves out: --ep (plan's alone; the search enumerates it).
#pragma once

#include <cstdint>
#include <string>

#include "core/flags.h"
#include "plan/state_bytes.h"

namespace shardlab::plan {

struct MoeFlags {
  std::uint64_t experts = 0, top_k = 2, every = 1, ffn = 0;
};

// Adds the four flags under the current help group.
void define_moe_flags(Flags& f, MoeFlags& v);

// "" when the flags given make a model, else one sentence. preset: a --preset fixed the model; preset_hint: what
// that command offers instead (e.g. "--preset 7b --ep e: Mixtral-like"); layers: L of the model.
std::string moe_flags_problem(const Flags& f, const MoeFlags& v, bool preset, const std::string& preset_hint,
                              std::uint64_t layers);

// The experts the flags give (experts 0 when --moe-experts was not given).
ExpertDims moe_dims(const Flags& f, const MoeFlags& v);

}  // namespace shardlab::plan
