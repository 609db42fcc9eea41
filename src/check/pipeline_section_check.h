// check/pipeline_section_check.h — the "pipeline" section of a trainer's ledger.json (written from the run's
// slots, report/pipeline_report.h) against the run's own schedule: the same stages, micro-batches, kind and
// chunks, and — exactly, being computed the same way — that schedule's bubble (f = 1, b = 2 and equal costs),
// the formula and the stash. Leaves out the measured, wall-clock numbers (`shardlab trace` checks them).
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "parallel/schedule.h"

namespace shardlab::plan {

// Throws std::runtime_error naming what differs; a ledger without the section passes unless pp > 1.
void check_pipeline_section(const nlohmann::json& ledger, int pp, ScheduleKind schedule, std::uint64_t micro_batches,
                            int virtual_stages);

}  // namespace shardlab::plan
