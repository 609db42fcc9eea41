// Chrome trace JSON for the per-rank timeline (see trace.h).
#include "comm/trace.h"

#include <nlohmann/json.hpp>

namespace shardlab {

std::string Trace::to_json_events(int rank) const {
  nlohmann::json a = nlohmann::json::array();
  a.push_back(
      {{"name", "process_name"}, {"ph", "M"}, {"pid", rank}, {"args", {{"name", "rank " + std::to_string(rank)}}}});
  a.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", rank}, {"args", {{"sort_index", rank}}}});
  a.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", rank}, {"tid", 0}, {"args", {{"name", "compute"}}}});
  a.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", rank}, {"tid", 1}, {"args", {{"name", "communication"}}}});
  a.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", rank}, {"tid", 2}, {"args", {{"name", "steps"}}}});
  for (const TraceEvent& e : events_)
    a.push_back({{"name", e.name},
                 {"cat", e.cat},
                 {"ph", "X"},
                 {"ts", e.begin_us},
                 {"dur", e.end_us - e.begin_us},
                 {"pid", rank},
                 {"tid", e.lane}});
  return a.dump();
}

std::string trace_document(const std::vector<std::string>& per_rank_events) {
  nlohmann::json all = nlohmann::json::array();
  for (const std::string& s : per_rank_events)
    for (auto& e : nlohmann::json::parse(s)) all.push_back(std::move(e));
  return nlohmann::json{{"traceEvents", all}, {"displayTimeUnit", "ms"}}.dump();
}

}  // namespace shardlab
