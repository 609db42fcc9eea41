// The pipeline section of ledger.json and the panels of schedule.svg (see pipeline_report.h).
#include "report/pipeline_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>

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

nlohmann::json pipeline_run_json(ScheduleKind schedule, int stages, int micro_batches, int virtual_stages, int step,
                                 int ranks_on_machine, int cpus_online) {
  return {{"schedule", schedule_name(schedule)}, {"stages", stages},      {"micro_batches", micro_batches},
          {"virtual_stages", virtual_stages},    {"measured_step", step}, {"ranks_on_machine", ranks_on_machine},
          {"cpus_online", cpus_online}};
}

std::string cpu_sharing_note(const nlohmann::json& p) {
  // A section written before these were recorded, or a machine that did not say: no note.
  if (!p.is_object() || !p.contains("ranks_on_machine") || !p.contains("cpus_online") ||
      !p["ranks_on_machine"].is_number_integer() || !p["cpus_online"].is_number_integer())
    return "";
  const int64_t ranks = p["ranks_on_machine"], cpus = p["cpus_online"];
  if (cpus <= 0 || ranks <= cpus) return "";
  return std::to_string(ranks) + " ranks on " + std::to_string(cpus) + (cpus == 1 ? " core" : " cores") +
         ": idle time includes waiting for a CPU";
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
                       measured, span_us / 1e3, "ms", cpu_sharing_note(run)});
    panels->push_back(
        {"the schedule's ideal: a forward costs 1, a backward 2", ideal.stages, ideal.makespan, "forward units", ""});
  }
  return j;
}

namespace {

// p[key] as a whole number in [lo, hi]; else std::runtime_error naming the key and what it holds.
int section_int(const nlohmann::json& p, const char* key, int64_t lo, int64_t hi) {
  if (!p.contains(key) || !p[key].is_number_integer())
    throw std::runtime_error(std::string("pipeline.") + key + " is missing or not a whole number");
  const int64_t x = p[key].get<int64_t>();
  if (x < lo || x > hi)
    throw std::runtime_error(std::string("pipeline.") + key + " = " + std::to_string(x) + " is not in [" +
                             std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return static_cast<int>(x);
}

// The measured slots of slots_ms, checked against the schedule the section names: one row per stage, each
// stage's forwards and backwards in the schedule's order, at finite times that never run backwards.
Timeline measured_slots(const nlohmann::json& rows, const std::vector<StageActions>& actions, int v) {
  if (!rows.is_array() || rows.size() != actions.size())
    throw std::runtime_error("pipeline.slots_ms must hold one row per stage (" + std::to_string(actions.size()) + ")");
  Timeline t;
  for (size_t s = 0; s < actions.size(); ++s) {
    const std::string where = "pipeline.slots_ms[" + std::to_string(s) + "]";
    std::vector<Action> compute;
    for (const Action& a : actions[s])
      if (a.act == Act::forward || a.act == Act::backward) compute.push_back(a);
    const nlohmann::json& row = rows[s];
    if (!row.is_array() || row.size() != compute.size())
      throw std::runtime_error(where + " must hold the stage's " + std::to_string(compute.size()) +
                               " forwards and backwards");
    std::vector<Slot> stage;
    for (size_t i = 0; i < compute.size(); ++i) {
      const nlohmann::json& x = row[i];
      const auto number = [&](int k) { return x.is_array() && x.size() == 5 && x[k].is_number(); };
      if (!(number(0) && number(1) && number(2) && number(3) && number(4)))
        throw std::runtime_error(where + "[" + std::to_string(i) +
                                 "] is not [forward?, micro-batch, chunk, start, end]");
      const Action& a = compute[i];
      const bool same = (x[0].get<double>() == 1) == (a.act == Act::forward) && x[1].get<double>() == a.micro_batch &&
                        x[2].get<double>() == a.chunk;
      const Slot slot{a.act, a.micro_batch, a.chunk, x[3].get<double>(), x[4].get<double>()};
      const double before = stage.empty() ? 0.0 : stage.back().end;
      if (!same || !std::isfinite(slot.start) || !std::isfinite(slot.end) || slot.start < before - 1e-6 ||
          slot.end < slot.start)
        throw std::runtime_error(where + "[" + std::to_string(i) + "] is not the schedule's " +
                                 (a.act == Act::forward ? "F" : "B") + std::to_string(a.micro_batch) +
                                 (v > 1 ? std::string(1, char('a' + a.chunk)) : "") +
                                 " at a time after the one before it");
      stage.push_back(slot);
      t.makespan = std::max(t.makespan, slot.end);
    }
    t.stages.push_back(stage);
  }
  return t;
}

}  // namespace

std::string pipeline_text(const nlohmann::json& p) {
  if (!p.is_object()) throw std::runtime_error("pipeline is not an object");
  ScheduleKind kind = ScheduleKind::one_f_one_b;
  if (!p.contains("schedule") || !p["schedule"].is_string() || !parse_schedule(p["schedule"].get<std::string>(), &kind))
    throw std::runtime_error("pipeline.schedule is not gpipe, 1f1b or interleaved");
  const int stages = section_int(p, "stages", 1, 4096), v = section_int(p, "virtual_stages", 1, 4096);
  const int m = section_int(p, "micro_batches", 1, kMaxPipelineSlots / (int64_t(stages) * v));
  const int step = section_int(p, "measured_step", 1, std::numeric_limits<int>::max());
  if (const std::string why = schedule_shape_problem(kind, stages, m, v); !why.empty())
    throw std::runtime_error("pipeline: " + why);
  const std::vector<StageActions> actions = make_schedule(kind, stages, m, v);
  if (!p.contains("slots_ms")) throw std::runtime_error("pipeline.slots_ms is missing");
  const Timeline t = measured_slots(p["slots_ms"], actions, v);
  // A cell is the median forward, or wider when a stall would make the rows far longer than their slots.
  std::vector<double> forwards;
  double busy = 0;
  for (const std::vector<Slot>& stage : t.stages)
    for (const Slot& x : stage) {
      busy += x.end - x.start;
      if (x.act == Act::forward) forwards.push_back(x.end - x.start);
    }
  std::sort(forwards.begin(), forwards.end());
  double unit = std::max(forwards[forwards.size() / 2], t.makespan / (200 + 4.0 * t.stages[0].size()));
  if (!(unit > 0) || !std::isfinite(unit)) unit = 1;
  const Timeline ideal = simulate(actions, v, 1, 2);
  char head[256];
  std::snprintf(head, sizeof head, "%s on %d stages, %d micro-batches: step %d as measured (a cell = %.2f ms)\n",
                schedule_name(kind), stages, m, step, unit);
  std::string o = head + schedule_grid(t, v, unit) + "the schedule's ideal (a forward costs 1, a backward 2):\n" +
                  schedule_grid(ideal, v, 1.0 / v);
  // Every bubble from the slots and the schedule, not from the section's stored sums.
  const double measured = t.makespan > 0 ? 1 - busy / (stages * t.makespan) : 0;
  std::snprintf(head, sizeof head, "bubble: %.1f%% measured, %.1f%% in the schedule, %.1f%% by the formula\n",
                100 * measured, 100 * ideal.bubble_fraction(), 100 * bubble_formula(kind, stages, m, v));
  const std::string note = cpu_sharing_note(p);
  return o + head + (note.empty() ? "" : "(measured: " + note + ")\n");
}

}  // namespace shardlab
