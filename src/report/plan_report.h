// report/plan_report.h — what `shardlab plan` prints: the chapter's model-state tables (C1, C3), the recipes
// side by side, activations per layer and for the whole model (C4, C5, C6), the data-parallel section
// (report/sharding_report.h) when a layout is given, the tensor-parallel one with --tp; and the measured-versus-formula
// check of a trainer's ledger.json (check/ledger_check.h). The command's flags live in cli/plan.cpp.
//
// With --tp the tensor-parallel section (report/tp_report.h) and the itemised activations of one tp rank;
// with --pp the pipeline and 3D section (report/pp_report.h); with --cp the context-parallel section
// (report/cp_report.h) and the itemised activations of one cp rank; with --moe-experts the MoE blocks' parameters
// and tensors, and with --ep the expert-parallel section (report/ep_report.h).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

#include "plan/activations.h"
#include "plan/state_bytes.h"
#include "report/cp_report.h"
#include "report/ep_report.h"
#include "report/pp_report.h"
#include "report/sharding_report.h"
#include "report/tp_report.h"

namespace shardlab::plan {

// The chapter's examples. Model states use psi (the round number), activations use act.
struct Preset {
  std::string name;
  std::uint64_t psi = 0;
  ActivationDims act;
};
bool find_preset(const std::string& name, Preset* out);  // "7b" | "70b"

// Everything a plan is printed from.
struct PlanRequest {
  bool preset_given = false;
  Preset preset;
  GptDims gpt;  // the project's GPT (without a preset)
  ActivationDims act;
  std::uint64_t params = 0;  // --params, 0 if absent
  Recipe recipe;
  AttentionKernel attention = AttentionKernel::naive;
  Recompute recompute = Recompute::none;
  double dropout = 0.0;
  bool sharding = false;  // a data-parallel layout was given
  ShardingRequest dp;
  bool tp_given = false;  // a tensor-parallel layout was given
  TpRequest tp;
  bool pp_given = false;  // a pipeline was given
  PpRequest pp;
  bool cp_given = false;  // a context-parallel layout was given
  CpRequest cp;
  bool ep_given = false;  // an expert-parallel layout was given (gpt.moe: the experts)
  EpRequest ep;
  std::uint64_t psi() const { return preset_given ? preset.psi : (params ? params : gpt_param_count(gpt)); }
};

void print_plan(std::ostream& out, const PlanRequest& request);

}  // namespace shardlab::plan
