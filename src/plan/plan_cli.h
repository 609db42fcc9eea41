// plan/plan_cli.h — `shardlab plan`: prints the chapter's model-state and activation formulas for a
// preset (the chapter's 7B/70B), for this project's GPT dims, or for a raw parameter count; and, with
// --ledger, prints check_ledger_text's (model_states.h) measured-versus-formula table.
//
// Leaves out: sharded layouts (ZeRO/FSDP/TP/PP per-rank formulas), communication volumes and time
// estimates; the ledger check covers unsharded model states only, not activations.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "plan/activations.h"
#include "plan/model_states.h"

namespace shardlab::plan {

// The chapter's examples. Model states use psi (the round number), activations use act.
struct Preset {
    std::string name;
    std::uint64_t psi = 0;
    ActivationDims act;
};
bool find_preset(const std::string& name, Preset* out);   // "7b" | "70b"

// `plan` with its arguments (without the leading "plan"), writing to out/err.
// Returns 0 on success (ledger mode: every category matches), 1 on a ledger mismatch, 2 on bad input.
int plan_run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// Entry point for `shardlab plan ...`; argv[0] is "plan".
int plan_main(int argc, char** argv);

}  // namespace shardlab::plan
