// Trace summary (see trace_summary.h). Per rank: the union of compute intervals (cat "compute") less
// the blocking calls made inside them, the union of communication intervals (cat "comm": blocking calls
// on lane 0, rings in flight on lane 1), their intersection (communication hidden behind compute) and the
// rest (exposed). By op and axis: "all_reduce tp", "reduce_scatter dp", ….
#include "report/trace_summary.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/paths.h"

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
  nlohmann::json doc = nlohmann::json::parse(read_file(path), nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array())
    throw std::runtime_error(path + " is not a trace.json (no array \"traceEvents\")");
  size_t spans = 0, index = 0;
  for (const auto& e : doc["traceEvents"]) {  // every span needs a numeric start, duration and rank
    if (!e.is_object() || !e.contains("ph") || !e["ph"].is_string() || e["ph"] != "X") {
      ++index;
      continue;
    }
    for (const char* key : {"ts", "dur", "pid"})
      if (!e.contains(key) || !e[key].is_number() || (std::string(key) == "pid" && !e[key].is_number_integer()))
        throw std::runtime_error(path + ": event " + std::to_string(index) + " has no numeric \"" + key +
                                 "\" (not a trace written by shardlab)");
    if (e.contains("tid") && !e["tid"].is_number_integer())
      throw std::runtime_error(path + ": event " + std::to_string(index) + " has a non-integer \"tid\"");
    ++spans;
    ++index;
  }
  if (spans == 0) throw std::runtime_error(path + " holds no spans to summarise (was the run traced with --trace on?)");
  struct Rank {
    Intervals compute, comm, blocking;  // blocking: calls on the compute lane, which the rank waits in
    std::vector<double> steps;
  };
  std::map<std::string, Intervals> by_op;  // all ranks: op name → intervals (rank-offset so ranks don't merge)
  Intervals all_compute;
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
    } else if (cat == "step")
      r.steps.push_back(d);
  }
  std::printf("%5s  %10s  %10s  %10s  %10s  %8s\n", "rank", "step ms", "compute ms", "comm ms", "exposed ms", "hidden");
  double all_comm = 0, all_hidden = 0;
  Intervals all_blocking;
  for (auto& [rank, r] : ranks) {
    // A blocking call inside a compute span (tensor parallelism's all-reduces sit inside a block's
    // forward) is time the rank waited, not computed: it is taken out of the compute intervals.
    const Intervals blocking = merge(r.blocking);
    Intervals compute = subtract(merge(r.compute), blocking), comm = merge(r.comm);
    for (const auto& iv : blocking) all_blocking.push_back({1e12 * rank + iv.first, 1e12 * rank + iv.second});
    const double c = length(comm), hidden = overlap(comm, compute);
    double step = 0;
    for (double s : r.steps) step += s;
    const double steps = r.steps.empty() ? 1 : double(r.steps.size());
    all_comm += c;
    all_hidden += hidden;
    std::printf("%5d  %10.2f  %10.2f  %10.2f  %10.2f  %7.1f%%\n", rank, step / steps / 1e3,
                length(compute) / steps / 1e3, c / steps / 1e3, (c - hidden) / steps / 1e3,
                c > 0 ? 100 * hidden / c : 0.0);
  }
  std::printf("(per step; hidden = share of communication time that ran while the rank computed)\n");
  std::printf("overall: %.1f%% of communication hidden behind compute\n",
              all_comm > 0 ? 100 * all_hidden / all_comm : 0.0);
  const Intervals compute = subtract(merge(all_compute), merge(all_blocking));
  for (auto& [op, iv] : by_op) {
    Intervals m = merge(iv);
    const double len = length(m);
    std::printf("  %-16s %9.2f ms in all, %5.1f%% hidden\n", op.c_str(), len / 1e3,
                len > 0 ? 100 * overlap(m, compute) / len : 0.0);
  }
  return 0;
}

}  // namespace shardlab
