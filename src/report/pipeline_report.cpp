// The pipeline section of ledger.json and the panels of schedule.svg (see pipeline_report.h).
#include "report/pipeline_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace shardlab {

nlohmann::json pipeline_rank_json(int stage, bool speaks, const std::vector<MeasuredSlot>& slots) {
  nlohmann::json j = {{"stage", stage}, {"speaks", speaks}};
  if (!speaks) return j;
  nlohmann::json s = nlohmann::json::array();
  for (const MeasuredSlot& m : slots)  // [forward?, micro-batch, chunk, start µs, end µs]
    s.push_back({m.act == Act::forward ? 1 : 0, m.micro_batch, m.chunk, m.start_us, m.end_us});
  j["slots"] = s;
  return j;
}

nlohmann::json pipeline_run_json(const std::string& schedule, int stages, int micro_batches, int virtual_stages,
                                 int step) {
  return {{"schedule", schedule},
          {"stages", stages},
          {"micro_batches", micro_batches},
          {"virtual_stages", virtual_stages},
          {"measured_step", step}};
}

nlohmann::json pipeline_section(const nlohmann::json& run, const nlohmann::json& ranks,
                                std::vector<SchedulePanel>* panels) {
  const int p = run["stages"], m = run["micro_batches"], v = run["virtual_stages"];
  ScheduleKind kind = ScheduleKind::one_f_one_b;
  parse_schedule(run["schedule"].get<std::string>(), &kind);
  const std::vector<StageActions> actions = make_schedule(kind, p, m, v);
  const Timeline ideal = simulate(actions, v, 1.0, 2.0), equal = simulate(actions, v, 1.0, 1.0);
  // Measured: each stage's slots on one wall clock (steady_clock is one clock for every process of a
  // machine), from the first action of any stage.
  std::vector<std::vector<Slot>> measured(p);
  double t0 = std::numeric_limits<double>::infinity(), t1 = -t0;
  for (const auto& r : ranks) {
    if (!r.contains("pipeline") || !r["pipeline"].value("speaks", false)) continue;
    const int s = r["pipeline"]["stage"];
    for (const auto& x : r["pipeline"]["slots"]) {
      measured[s].push_back({x[0].get<int>() ? Act::forward : Act::backward, x[1].get<int>(), x[2].get<int>(),
                             x[3].get<double>(), x[4].get<double>()});
      t0 = std::min(t0, x[3].get<double>());
      t1 = std::max(t1, x[4].get<double>());
    }
  }
  nlohmann::json busy = nlohmann::json::array(), stash = nlohmann::json::array();
  double idle = 0;
  const double span_us = t1 > t0 ? t1 - t0 : 0;
  for (int s = 0; s < p; ++s) {
    double b = 0;
    for (Slot& x : measured[s]) {
      b += x.end - x.start;
      x.start = (x.start - t0) / 1e3;  // ms from the step's first action
      x.end = (x.end - t0) / 1e3;
    }
    busy.push_back(b / 1e3);
    idle += span_us - b;
    stash.push_back(ideal.stash[s]);
  }
  nlohmann::json j = run;
  j["bubble_formula"] = bubble_formula(kind, p, m, v);
  j["bubble_schedule"] = ideal.bubble_fraction();        // a backward costing two forwards
  j["bubble_schedule_equal"] = equal.bubble_fraction();  // equal costs
  j["bubble_measured"] = span_us > 0 ? idle / (p * span_us) : 0.0;
  j["measured_ms"] = span_us / 1e3;
  j["busy_ms"] = busy;
  j["stash_schedule"] = stash;                     // micro-batch records alive at once, per stage (one per chunk)
  nlohmann::json slots = nlohmann::json::array();  // per stage: [forward?, micro-batch, chunk, start ms, end ms]
  for (const auto& stage : measured) {
    nlohmann::json row = nlohmann::json::array();
    for (const Slot& x : stage) row.push_back({x.act == Act::forward ? 1 : 0, x.micro_batch, x.chunk, x.start, x.end});
    slots.push_back(row);
  }
  j["slots_ms"] = slots;
  if (panels) {
    panels->push_back({"measured: step " + std::to_string(run["measured_step"].get<int>()) + ", " +
                           run["schedule"].get<std::string>() + " on " + std::to_string(p) + " stages, " +
                           std::to_string(m) + " micro-batches (wall clock)",
                       measured, span_us / 1e3, "ms"});
    panels->push_back(
        {"the schedule's ideal: a forward costs 1, a backward 2", ideal.stages, ideal.makespan, "forward units"});
  }
  return j;
}

std::string pipeline_text(const nlohmann::json& p) {
  const int stages = p.at("stages"), m = p.at("micro_batches"), v = p.at("virtual_stages");
  Timeline t;
  std::vector<double> forwards;  // a cell is the median forward
  for (const auto& row : p.at("slots_ms")) {
    std::vector<Slot> stage;
    for (const auto& x : row) {
      stage.push_back({x[0].get<int>() ? Act::forward : Act::backward, x[1].get<int>(), x[2].get<int>(),
                       x[3].get<double>(), x[4].get<double>()});
      t.makespan = std::max(t.makespan, stage.back().end);
      if (stage.back().act == Act::forward) forwards.push_back(stage.back().end - stage.back().start);
    }
    t.stages.push_back(stage);
  }
  std::sort(forwards.begin(), forwards.end());
  double unit = forwards.empty() ? 1.0 : forwards[forwards.size() / 2];
  if (!(unit > 0) || !std::isfinite(unit)) unit = 1;
  ScheduleKind kind = ScheduleKind::one_f_one_b;
  parse_schedule(p.at("schedule").get<std::string>(), &kind);
  const Timeline ideal = simulate(make_schedule(kind, stages, m, v), v, 1, 2);
  char head[256];
  std::snprintf(head, sizeof head, "%s on %d stages, %d micro-batches: step %d as measured (a cell = %.2f ms)\n",
                p.at("schedule").get<std::string>().c_str(), stages, m, p.at("measured_step").get<int>(), unit);
  std::string o = head + schedule_grid(t, v, unit) + "the schedule's ideal (a forward costs 1, a backward 2):\n" +
                  schedule_grid(ideal, v, 1.0 / v);
  std::snprintf(head, sizeof head, "bubble: %.1f%% measured, %.1f%% in the schedule, %.1f%% by the formula\n",
                100 * p.at("bubble_measured").get<double>(), 100 * p.at("bubble_schedule").get<double>(),
                100 * p.at("bubble_formula").get<double>());
  return o + head;
}

}  // namespace shardlab
