// A pipeline schedule as a picture — the chapter's figure (claims C20, C21): one row per stage, a box per
// forward (blue) and backward (green; four shades, lighter for later chunks of an interleaved stage) labelled
// with its micro-batch's number and chunk letter ("3b") — smaller, or the number alone, where a narrow box
// needs it, and no label where none fits — idle time grey. Panels stack: a run's own measured timeline above
// the schedule's ideal one (parallel/schedule.h simulate), each on its own time axis with round ticks, and a
// panel's note (e.g. that ranks shared cores) under it.
#pragma once
#include <string>
#include <vector>

#include "parallel/schedule.h"

namespace shardlab {

struct SchedulePanel {
  std::string title;                      // e.g. "measured: step 6, 4 stages, wall clock"
  std::vector<std::vector<Slot>> stages;  // per stage, its compute slots (start/end on the panel's axis)
  double makespan = 0;
  std::string unit;  // the axis's unit, e.g. "ms" or "forward units"
  std::string note;  // said under the panel in a warning colour when not empty (report/pipeline_report.h)
};

std::string schedule_svg(const std::vector<SchedulePanel>& panels, int virtual_stages);

}  // namespace shardlab
