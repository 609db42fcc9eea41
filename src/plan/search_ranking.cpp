// plan/search_ranking.cpp — rank the layouts that fit, and place the rule of thumb among them (see search_ranking.h).
#include "plan/search_ranking.h"

#include <algorithm>

namespace shardlab::plan {

namespace {
using u64 = std::uint64_t;
}

std::optional<SearchLayout> rule_of_thumb_layout(const SearchModel& m, const SearchSpace& space,
                                                 double gpu_memory_bytes) {
  const u64 N = space.gpus, node = std::min(space.ranks_per_node, N);
  u64 tp = 1;
  for (u64 t = 1; t <= node; ++t)
    if (m.heads % t == 0 && node % t == 0 && N % t == 0) tp = t;
  std::optional<SearchLayout> first;  // the first that divides, if none fits
  for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full})
    for (u64 pp = 1; pp <= N / tp; ++pp) {
      if ((N / tp) % pp != 0) continue;
      SearchLayout l;
      l.tp = tp, l.pp = pp, l.dp = N / (tp * pp), l.zero = 1, l.micro_batch = 1;
      l.recompute = r, l.attention = AttentionKernel::flash;
      if (!search_layout_problem(m, space, l).empty()) continue;
      l.micro_batches = space.global_batch / l.dp;
      if (!first) first = l;
      SearchLayout replica = l;  // "until the model fits": one whole replica per tp × pp group, before ZeRO-1
      replica.zero = 0;
      if (double(search_memory(m, replica).total()) <= gpu_memory_bytes) return l;
    }
  return first;
}

SearchResult search_layouts(const SearchModel& m, const SearchSpace& space, const StepRates& rates,
                            double gpu_memory_bytes) {
  SearchResult out;
  out.counts = enumerate_layouts(m, space);
  for (const SearchLayout& l : out.counts.layouts) {
    SearchRow row{l, search_memory(m, l), {}};
    if (double(row.memory.total()) > gpu_memory_bytes) {
      ++out.over_memory;
      continue;
    }
    row.time = step_time(m, l, space.global_batch, rates);
    out.rows.push_back(row);
  }
  std::stable_sort(out.rows.begin(), out.rows.end(), [](const SearchRow& a, const SearchRow& b) {
    if (a.time.step() != b.time.step()) return a.time.step() < b.time.step();
    return a.memory.total() < b.memory.total();
  });
  if (const std::optional<SearchLayout> rule = rule_of_thumb_layout(m, space, gpu_memory_bytes)) {
    out.rule = SearchRow{*rule, search_memory(m, *rule), step_time(m, *rule, space.global_batch, rates)};
    for (size_t i = 0; i < out.rows.size(); ++i)
      if (out.rows[i].layout == *rule) out.rule_rank = i + 1;
  }
  return out;
}

}  // namespace shardlab::plan
