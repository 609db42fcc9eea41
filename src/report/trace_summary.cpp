// Trace summary (see trace_summary.h). Per rank, inside its training steps (cat "step"): the union of
// compute intervals (cat "compute") less the blocking calls made inside them, the union of communication
// intervals (cat "comm": blocking calls on lane 0, rings in flight on lane 1), their intersection
// (communication hidden behind compute) and the rest (exposed). Time outside every step (evaluation, the
// end-of-run gathers of ledgers and checkpoints) is reported apart, never averaged into a step. By op and
// axis: "all_reduce tp", "reduce_scatter dp", …. A trace no run could have written (a negative or endless
// duration, ranks not numbered 0…N−1, a damaged file) is refused with what is wrong.
#include "report/trace_summary.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/paths.h"
#include "io/json_file.h"

namespace shardlab {

namespace {

using Intervals = std::vector<std::pair<double, double>>;

Intervals merge(Intervals v) {
  std::sort(v.begin(), v.end());
  Intervals out;
  for (const auto& iv : v) {
    if (!out.empty() && iv.first <= out.back().second)
      out.back().second = std::max(out.back().second, iv.second);
    else
      out.push_back(iv);
  }
  return out;
}

double length(const Intervals& v) {
  double s = 0;
  for (const auto& iv : v) s += iv.second - iv.first;
  return s;
}

double overlap(const Intervals& a, const Intervals& b) {  // both merged
  double s = 0;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const double lo = std::max(a[i].first, b[j].first), hi = std::min(a[i].second, b[j].second);
    if (hi > lo) s += hi - lo;
    (a[i].second < b[j].second) ? ++i : ++j;
  }
  return s;
}

// a and b, both merged: the parts both cover.
Intervals intersect(const Intervals& a, const Intervals& b) {
  Intervals out;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const double lo = std::max(a[i].first, b[j].first), hi = std::min(a[i].second, b[j].second);
    if (hi > lo) out.push_back({lo, hi});
    (a[i].second < b[j].second) ? ++i : ++j;
  }
  return out;
}

// a minus b, both merged: the parts of a that no interval of b covers.
Intervals subtract(const Intervals& a, const Intervals& b) {
  Intervals out;
  size_t j = 0;
  for (auto [lo, hi] : a) {
    while (j < b.size() && b[j].second <= lo) ++j;
    for (size_t k = j; k < b.size() && b[k].first < hi; ++k) {
      if (b[k].first > lo) out.push_back({lo, b[k].first});
      lo = std::max(lo, b[k].second);
    }
    if (hi > lo) out.push_back({lo, hi});
  }
  return out;
}

}  // namespace

int print_trace_summary(const std::string& run_dir) {
  const std::string path = run_dir + "/trace.json";
  if (input_file_problem(path).find("does not exist") != std::string::npos)
    throw std::runtime_error(path + " does not exist (train with --trace on --out " + run_dir + ")");
  const nlohmann::json doc = read_json_file(path);  // a damaged file says where it breaks
  if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array())
    throw std::runtime_error(path + " is not a trace.json (no array \"traceEvents\")");
  // Every span: a numeric start and a duration a run can have (finite, not negative, under 30 days, in µs),
  // on a rank numbered 0…N−1 with every rank present.
  constexpr double kLongest = 30.0 * 86400 * 1e6;
  size_t spans = 0, index = 0;
  int max_pid = -1;
  std::map<int, bool> pids;
  for (const auto& e : doc["traceEvents"]) {
    const std::string at = path + ": event " + std::to_string(index++);
    if (!e.is_object() || !e.contains("ph") || !e["ph"].is_string() || e["ph"] != "X") continue;
    for (const char* key : {"ts", "dur", "pid"})
      if (!e.contains(key) || !e[key].is_number() || (std::string(key) == "pid" && !e[key].is_number_integer()))
        throw std::runtime_error(at + " has no numeric \"" + key + "\" (not a trace written by shardlab)");
    if (e.contains("tid") && !e["tid"].is_number_integer()) throw std::runtime_error(at + " has a non-integer \"tid\"");
    const double ts = e["ts"].get<double>(), dur = e["dur"].get<double>();
    if (!(ts >= 0 && ts <= kLongest && dur >= 0 && dur <= kLongest)) {
      char what[160];
      std::snprintf(what, sizeof what, " starts at %.6g µs and lasts %.6g µs", ts, dur);
      throw std::runtime_error(at + what + ": no run's span does (a trace shardlab wrote, edited?)");
    }
    const int64_t pid = e["pid"].get<int64_t>();
    if (pid < 0 || pid > 1000000)
      throw std::runtime_error(at + " is on rank " + std::to_string(pid) + ": no run has it");
    pids[static_cast<int>(pid)] = true;
    max_pid = std::max(max_pid, static_cast<int>(pid));
    ++spans;
  }
  if (spans == 0) throw std::runtime_error(path + " holds no spans to summarise (was the run traced with --trace on?)");
  if (static_cast<int>(pids.size()) != max_pid + 1)
    throw std::runtime_error(path + " has spans of " + std::to_string(pids.size()) + " ranks numbered up to " +
                             std::to_string(max_pid) + ": a run's trace holds every rank 0…N−1");
  struct Rank {
    Intervals compute, comm, blocking, steps;  // blocking: calls on the compute lane, which the rank waits in
  };
  std::map<std::string, Intervals> by_op;  // all ranks: op name → intervals (rank-offset so ranks don't merge)
  Intervals all_compute, all_steps;
  std::map<int, Rank> ranks;
  for (const auto& e : doc["traceEvents"]) {
    if (!e.is_object() || !e.contains("ph") || e["ph"] != "X") continue;
    const double b = e["ts"].get<double>(), d = e["dur"].get<double>();
    Rank& r = ranks[e["pid"].get<int>()];
    const std::string cat = e.contains("cat") && e["cat"].is_string() ? e["cat"].get<std::string>() : "";
    const double shift = 1e12 * e["pid"].get<int>();  // lay ranks end to end so their intervals never meet
    if (cat == "compute") {
      r.compute.push_back({b, b + d});
      all_compute.push_back({shift + b, shift + b + d});
    } else if (cat == "comm") {
      r.comm.push_back({b, b + d});
      if (e.value("tid", 0) == 0) r.blocking.push_back({b, b + d});
      const std::string name = e.contains("name") && e["name"].is_string() ? e["name"].get<std::string>() : "?";
      const size_t space = name.find(' '), second = space == std::string::npos ? space : name.find(' ', space + 1);
      by_op[name.substr(0, second)].push_back({shift + b, shift + b + d});
    } else if (cat == "step") {
      r.steps.push_back({b, b + d});
      all_steps.push_back({shift + b, shift + b + d});
    }
  }
  std::printf("%5s  %10s  %10s  %10s  %10s  %8s\n", "rank", "step ms", "compute ms", "comm ms", "exposed ms", "hidden");
  double all_comm = 0, all_hidden = 0, outside = 0;
  Intervals all_blocking;
  for (auto& [rank, r] : ranks) {
    // Only what happens inside the steps counts per step (a trace without step spans: all of it).
    const Intervals steps = merge(r.steps);
    auto in_steps = [&](const Intervals& v) { return steps.empty() ? merge(v) : intersect(merge(v), steps); };
    // A blocking call inside a compute span (tensor parallelism's all-reduces sit inside a block's
    // forward) is time the rank waited, not computed: it is taken out of the compute intervals.
    const Intervals blocking = in_steps(r.blocking);
    Intervals compute = subtract(in_steps(r.compute), blocking), comm = in_steps(r.comm);
    outside += length(merge(r.comm)) - length(comm);
    for (const auto& iv : blocking) all_blocking.push_back({1e12 * rank + iv.first, 1e12 * rank + iv.second});
    const double c = length(comm), hidden = overlap(comm, compute);
    const double steps_n = r.steps.empty() ? 1 : double(r.steps.size());
    all_comm += c;
    all_hidden += hidden;
    std::printf("%5d  %10.2f  %10.2f  %10.2f  %10.2f  %7.1f%%\n", rank, length(steps) / steps_n / 1e3,
                length(compute) / steps_n / 1e3, c / steps_n / 1e3, (c - hidden) / steps_n / 1e3,
                c > 0 ? 100 * hidden / c : 0.0);
  }
  std::printf("(per step; hidden = share of communication time that ran while the rank computed)\n");
  std::printf("overall: %.1f%% of communication hidden behind compute\n",
              all_comm > 0 ? 100 * all_hidden / all_comm : 0.0);
  if (outside > 0)
    std::printf("(and %.2f ms of communication outside the steps, all ranks: evaluation, the end-of-run gathers)\n",
                outside / 1e3);
  const Intervals compute = subtract(merge(all_compute), merge(all_blocking)), steps = merge(all_steps);
  for (auto& [op, iv] : by_op) {
    Intervals m = steps.empty() ? merge(iv) : intersect(merge(iv), steps);
    const double len = length(m);
    if (len == 0) continue;  // only outside the steps
    std::printf("  %-16s %9.2f ms in the steps, %5.1f%% hidden\n", op.c_str(), len / 1e3,
                len > 0 ? 100 * overlap(m, compute) / len : 0.0);
  }
  return 0;
}

}  // namespace shardlab
