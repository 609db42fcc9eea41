// A pipeline run's step beside its schedule (claims C20–C22): each stage's measured compute actions of the
// last training step (one rank per stage: dp 0, tp 0), the wall-clock bubble they leave, and beside them
// the schedule's own ideal timeline (parallel/schedule.h simulate, a backward costing two forwards, and
// with equal costs), the chapter's formula and the stash per stage — the "pipeline" section of
// ledger.json and the two panels of DIR/schedule.svg.
#pragma once
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "parallel/pipeline.h"
#include "report/schedule_svg.h"

namespace shardlab {

// This rank's share: its stage and, when it speaks for the stage, its measured slots.
nlohmann::json pipeline_rank_json(int stage, bool speaks, const std::vector<MeasuredSlot>& slots);
// The run-wide facts: schedule, stages p, micro-batches m, chunks per stage v, the step measured, and the
// machine it was measured on: the job's ranks there and its CPUs online (core/machine.h).
nlohmann::json pipeline_run_json(ScheduleKind schedule, int stages, int micro_batches, int virtual_stages, int step,
                                 int ranks_on_machine, int cpus_online);
// "N ranks on M cores: idle time includes waiting for a CPU" when the section's run had more ranks on its
// machine than CPUs (the measured bubble then holds turns on a core, not only the schedule's); else "".
std::string cpu_sharing_note(const nlohmann::json& pipeline);
// From the run-wide facts and every rank's ledger entry: the ledger's "pipeline" section and the pictures.
nlohmann::json pipeline_section(const nlohmann::json& run, const nlohmann::json& ranks,
                                std::vector<SchedulePanel>* panels);
// A ledger's pipeline section as text: the measured step's grid above the schedule's, and the bubbles
// (computed from the slots and the schedule). A section that is not one a run wrote — a field missing or out
// of range, slots that are not its schedule's — throws std::runtime_error saying what is wrong.
std::string pipeline_text(const nlohmann::json& pipeline);

}  // namespace shardlab
