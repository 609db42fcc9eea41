// plan/plan_cli.h — `shardlab plan`: prints the chapter's model-state and activation formulas for a
// preset (the chapter's 7B/70B), for this project's GPT dims, or for a raw parameter count; with --dp,
// the per-rank model states and per-step ring bytes of DP / ZeRO-1/2/3 / FSDP (plan/sharding_report.h);
// and, with --ledger, the measured-versus-formula check of a trainer ledger.json, single-process or
// data-parallel (plan/ledger_check.h).
//
// Leaves out: TP/PP/CP/EP layouts, and activations in the ledger check.
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
// Returns 0 on success (ledger mode: everything matches), 1 on a ledger mismatch, 2 on bad input.
int plan_run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// Entry point for `shardlab plan ...`; argv[0] is "plan".
int plan_main(int argc, char** argv);

}  // namespace shardlab::plan
