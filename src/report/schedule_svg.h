// A pipeline schedule as a picture — the chapter's figure (claims C20, C21): one row per stage, a box per
// forward (blue) and backward (green; four shades, lighter for later chunks of an interleaved stage, the
// letter after the number telling every chunk apart) with the micro-batch's number in it, idle time grey. Panels stack:
// a run's own measured timeline above the schedule's ideal one (parallel/schedule.h simulate), each on its own time
// axis.
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
};

std::string schedule_svg(const std::vector<SchedulePanel>& panels, int virtual_stages);

}  // namespace shardlab
