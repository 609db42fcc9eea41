// check/ledger_check.h — measured versus formula for a trainer's ledger.json, to the byte.
//
// Without "layout" (a single-process run): rank 0's current model-state bytes per category against
// model_state_bytes (claims C1, C3). With "layout" (a DP / ZeRO / FSDP run, claims C8, C11–C14): for
// every rank, its current model-state bytes per category against per_rank_model_state_bytes, and the
// bytes it sent in ring collectives on axis "dp" (ops reduce_scatter, all_gather, all_reduce; impl
// "ring") divided by the step count against step_comm_bytes — intra- and inter-node separately when
// the layout gives ranks_per_node, their sum otherwise. The layout's shard_group, padded_params and
// shard, when present, must equal the formula's G, Ψ_pad and S.
//
// With "model.activations" (every run since activations are itemised): every saved tensor of every rank —
// its bytes per layer per micro-batch and how many were allocated — and the activation peak, against
// plan/activation_items.h, exactly.
//
// With tensor parallelism (layout.tp > 1): every rank of the dp × tp grid; model states of Ψ_t, the
// ledger's model.params against Ψ_t; the dp formulas over the dp group of ranks holding the same slice
// (ranks_per_node / tp of them per node); and each rank's ring bytes on axis "tp", purpose by purpose
// (the regions, "regather", "replicated_grads", "vocab"), against plan/tp_bytes.h.
//
// With pipeline stages (layout.pp > 1): each rank against its stage — Ψ of its units, the activation items
// of its blocks (the head's only on the last stage) and the peak its schedule leaves, and its point-to-point
// bytes on axis "pp" (plan/pipeline_stages.h). The ledger's "pipeline" section must describe the layout's
// schedule, with that schedule's bubbles, formula and stash exactly (a ledger that disagrees is refused);
// its measured, wall-clock numbers are not formulas (`shardlab trace` checks them against the slots).
//
// With context parallelism (layout.cp > 1, claim C24): the world is dp × pp × cp × tp; every rank's activation
// items hold its s/c tokens of each sample; the data-parallel formulas (ring volumes, ZeRO/FSDP shards) run
// over the gradient group of dp·c members (member dp·c + cp); and each rank's ring attention messages on axis
// "cp", sent and received, against plan/cp_bytes.h, with the ring's comm_buffer (check/cp_check.h).
//
// With sharded parameters (ZeRO-3, FSDP full or hybrid) and the model's shape: every rank's parameter peak is at
// most its shard plus two gathered units (the one computing, the one prefetched) — a gathered unit kept alive
// longer (until backward, say) breaks the bound.
//
// With experts (the ledger's "moe" section, claim C25): every rank's parameters against the dense blocks plus each
// MoE block's router and E/ep experts (plan/state_bytes.h), its moe.expert_params, and its activations over the
// run with each MoE record sized by its rows (check/activation_check.h; the rows: check/moe_check.h). With expert
// parallelism (layout.ep > 1) the world is dp × pp × cp × ep × tp; every all-to-all on axis ep against
// plan/ep_bytes.h, totals and each kept record (check/moe_check.h); and the dp axis's all-reduces per step — the
// dense gradients over the dp·ep ranks, the experts' over dp (none at dp = 1) — range by range (plan/ep_bytes.h).
//
// Leaves out: other memory peaks (workspace is not a formula), other ops on the dp and tp axes (e.g. the
// loss's "all_gather_value"), and the comm bytes of "mpi" runs (MPI's internal
// traffic is not observable; those runs check model states only).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "check/cp_check.h"
#include "check/moe_check.h"
#include "comm/comm_impl.h"
#include "model/token_positions.h"
#include "parallel/schedule.h"
#include "plan/activation_items.h"
#include "plan/comm_volume.h"
#include "plan/sharding.h"
#include "plan/state_bytes.h"
#include "plan/tp_bytes.h"

namespace shardlab::plan {

// One model-state category of one rank.
struct LedgerRow {
  Mem category = Mem::param;
  std::uint64_t formula = 0;   // bytes the formula gives this rank
  std::uint64_t measured = 0;  // ranks[rank].memory[category].current (0 if absent)
  bool present = false;        // category appears in the ledger
  bool match = false;          // measured == formula
};

// One rank's ring traffic on axis "dp".
struct CommRow {
  StepComm formula;   // bytes per step (step_comm_bytes)
  StepComm measured;  // bytes over the whole run, from comm.totals
  std::uint64_t steps = 0;
  bool split = false;  // intra and inter compared separately (ranks_per_node given)
  bool match = false;  // measured == formula × steps (per link kind when split)
};

// One saved activation tensor (a ledger item) of one rank: bytes per layer per micro-batch and the number
// of allocations, formula (plan/activation_items.h) against measured.
struct ActivationRow {
  std::string item;
  std::uint64_t formula_bytes = 0, measured_bytes = 0;
  std::uint64_t formula_allocations = 0, measured_allocations = 0;
  bool in_formula = false, in_ledger = false;
  bool match = false;
  // With experts the sizes follow the routing: the run's bytes allocated and the item's peak are compared too.
  bool totals = false;
  bool varying = false;  // the formula's allocations differ in size (then no bytes each)
  std::uint64_t formula_total = 0, measured_total = 0, formula_peak = 0, measured_peak = 0;
};

// One rank's ring traffic on axis "tp" by purpose, per step (plan/tp_bytes.h).
struct TpRow {
  TpStepBytes formula;   // bytes per step
  TpStepBytes measured;  // bytes over the whole run
  std::vector<TpPhase> phases;
  bool match = false;  // measured == formula × steps, purpose by purpose
};

// One rank's point-to-point bytes on axis "pp" (plan/pipeline_stages.h).
struct PpRow {
  std::uint64_t formula = 0;   // bytes sent per step
  std::uint64_t measured = 0;  // over the whole run
  bool match = false;
};

struct RankCheck {
  int rank = 0;
  int dp_rank = 0, pp_rank = 0, cp_rank = 0, ep_rank = 0, tp_rank = 0;  // comm/grid_coords.h
  std::uint64_t grad_member = 0;  // its index in the gradient group (dp × cp × ep): (dp_rank·CP + cp_rank)·EP + ep_rank
  std::uint64_t psi = 0;          // the parameters this rank holds, by the formula
  std::uint64_t psi_measured = 0;            // ranks[].params (0 if the ledger has none)
  TpRow tp;                                  // when LedgerCheck::tp_checked
  PpRow pp;                                  // when LedgerCheck::pp_checked
  CpRow cp;                                  // when LedgerCheck::cp_checked
  EpRow ep;                                  // when LedgerCheck::ep_checked
  std::uint64_t expert_params = 0;           // with experts: the formula's (E/ep experts per MoE block) …
  std::int64_t expert_params_measured = -1;  // … and moe.expert_params (-1: absent)
  std::vector<std::string> moe_problems;     // recorded rows that contradict the formula (dropless, one process)
  std::uint64_t kept_min = 0, kept_max = 0, received_min = 0, received_max = 0;  // n, m over its training forwards
  std::vector<LedgerRow> states;                      // one per model-state category, in ledger order
  CommRow comm;                                       // compared only when LedgerCheck::comm_checked
  std::vector<ActivationRow> activations;             // when LedgerCheck::activations_checked
  std::uint64_t peak_formula = 0, peak_measured = 0;  // the activation peak
  // Sharded parameters (ZeRO-3, FSDP full/hybrid): the param peak against its bound — the shard plus two
  // gathered units (the one computing and the one prefetched), each at most the largest unit and its padding.
  bool param_peak_checked = false;
  std::uint64_t param_peak_bound = 0, param_peak_measured = 0;
  bool activations_match() const;
};

// A layout field the ledger states and the formula derives.
struct LayoutRow {
  std::string field;  // "shard_group" | "padded_params" | "shard"
  std::uint64_t formula = 0, measured = 0;
  bool match = false;
};

struct LedgerCheck {
  Recipe recipe;
  std::uint64_t psi = 0;
  int world_size = 1;
  bool sharded = false;                 // "layout" present: every rank and its comm are checked
  Layout layout;                        // sharded only; layout.dp is the gradient group: dp·cp
  ShardLayout sharding;                 // sharded only
  std::uint64_t steps = 0;              // sharded only
  CommImpl comm_impl = CommImpl::ring;  // sharded only
  bool comm_checked = false;            // sharded ring runs
  bool activations_checked = false;     // the ledger describes its activations (model.activations)
  std::uint64_t tp = 1;                 // layout.tp (1 when absent)
  bool sequence_parallel = false;
  std::uint64_t world_ranks_per_node = 0;  // layout.ranks_per_node as recorded (layout.ranks_per_node is per dp group)
  bool tp_checked = false;                 // tp > 1 with ring collectives
  int pp = 1, virtual_stages = 1;          // layout.pp, layout.virtual_stages
  std::vector<int> pp_layers;
  ScheduleKind schedule = ScheduleKind::one_f_one_b;
  bool pp_checked = false;    // pp > 1
  std::uint64_t grid_dp = 1;  // layout.dp as recorded: the dp axis of the grid
  std::uint64_t cp = 1;       // layout.cp (1 when absent)
  ContextSplit cp_split = ContextSplit::zigzag;
  bool cp_checked = false;           // cp > 1
  std::uint64_t ep = 1;              // layout.ep (1 when absent)
  bool ep_checked = false;           // ep > 1
  bool moe_rows_recorded = false;    // with experts: n and m from the run's rows (capacity or ep), not s·b·k
  std::uint64_t moe_capacity = 0;    // slots per expert per sample (0: dropless)
  double bucket_mb = 1.0;            // layout.bucket_mb: the gradient buckets (ep: where the all-reduces cut)
  ActivationShape activation_shape;  // .moe: the experts (off without a "moe" section)
  std::vector<LayoutRow> layout_rows;
  std::vector<RankCheck> ranks;  // in rank order; without a layout only rank 0
  bool ok() const;               // every row of every rank (and every layout row) matches
};

// The ledger's "layout" section (and world_size, read before) into c: the grid, the gradient group, the sharding and
// which axes are checked. Throws std::runtime_error naming the field that is bad. plan/rank_prediction.h reads a
// layout it describes itself through it, so the prediction and the check derive the same groups.
void read_layout(const nlohmann::json& j, LedgerCheck* c);

// Parses ledger.json text and runs the check. Throws std::runtime_error with a one-line reason if
// the JSON, a required field, or the layout is bad (e.g. ranks missing, world_size ≠ layout.dp).
LedgerCheck check_ledger_text(const std::string& json_text);

}  // namespace shardlab::plan
