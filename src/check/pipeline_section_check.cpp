// check/pipeline_section_check.cpp — the ledger's pipeline section against its schedule (see
// pipeline_section_check.h).
#include "check/pipeline_section_check.h"

#include <stdexcept>
#include <string>
#include <vector>

#include "check/ledger_read.h"

namespace shardlab::plan {

using u64 = std::uint64_t;

void check_pipeline_section(const Json& j, int pp, ScheduleKind schedule, u64 m, int virtual_stages) {
  if (!j.contains("pipeline")) {
    if (pp > 1)
      throw std::runtime_error("a pipeline ledger (layout.pp " + std::to_string(pp) + ") has no \"pipeline\"");
    return;
  }
  const Json& p = j.at("pipeline");
  const std::string where = "pipeline";
  if (!p.is_object()) throw std::runtime_error("\"pipeline\" must be an object");
  if (need_u64(p, "stages", where) != u64(pp) || need_u64(p, "micro_batches", where) != m ||
      need_u64(p, "virtual_stages", where) != u64(virtual_stages) || !p.contains("schedule") ||
      p.at("schedule") != schedule_name(schedule))
    throw std::runtime_error("the pipeline section describes another schedule than layout's (pp " + std::to_string(pp) +
                             ", " + schedule_name(schedule) + ", " + std::to_string(m) +
                             " micro-batches, virtual stages " + std::to_string(virtual_stages) + ")");
  const std::vector<StageActions> actions = make_schedule(schedule, pp, static_cast<int>(m), virtual_stages);
  const Timeline ideal = simulate(actions, virtual_stages, 1, 2), equal = simulate(actions, virtual_stages, 1, 1);
  auto number = [&](const char* key) {
    if (!p.contains(key) || !p.at(key).is_number())
      throw std::runtime_error("pipeline." + std::string(key) + " is missing");
    return p.at(key).get<double>();
  };
  if (number("bubble_schedule") != ideal.bubble_fraction() ||
      number("bubble_schedule_equal") != equal.bubble_fraction() ||
      number("bubble_formula") != bubble_formula(schedule, pp, static_cast<int>(m), virtual_stages))
    throw std::runtime_error(
        "the pipeline section's bubbles are not its schedule's (bubble_schedule, "
        "bubble_schedule_equal, bubble_formula)");
  if (!p.contains("stash_schedule") || p.at("stash_schedule") != Json(ideal.stash))
    throw std::runtime_error("pipeline.stash_schedule is not the schedule's stash per stage");
}

}  // namespace shardlab::plan
