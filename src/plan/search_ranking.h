// plan/search_ranking.h — the layouts of plan/layout_search.h that fit a GPU's memory, ranked by the step time of
// plan/step_time.h (fastest first; ties by less memory, then by enumeration order), and the chapter's rule of thumb
// for the same model (C19, C26): TP inside a node (the largest tp dividing both the heads and the node), PP across
// nodes until the model fits (one unsharded replica per tp × pp group, C26's 1120 GB / (T·P)), DP outermost with ZeRO-1
// on top; one sample per micro-batch, flash attention, and recompute only if nothing fits without it (selective, then
// full).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "plan/layout_search.h"
#include "plan/step_time.h"

namespace shardlab::plan {

struct SearchRow {
  SearchLayout layout;
  SearchMemory memory;
  StepTime time;
};

struct SearchResult {
  Enumeration counts;             // enumerated, refused by divisibility, and the layouts that divide
  std::uint64_t over_memory = 0;  // of those, more than the GPU's memory
  std::vector<SearchRow> rows;    // the rest, fastest first
  std::optional<SearchRow> rule;  // the rule of thumb's layout (none if it fits nowhere)
  std::uint64_t rule_rank = 0;    // its 1-based place in rows
};

// Fits when model states + activations ≤ gpu_memory_bytes.
SearchResult search_layouts(const SearchModel& m, const SearchSpace& space, const StepRates& rates,
                            double gpu_memory_bytes);

// The rule of thumb's layout (it may not fit: the caller checks), or none when no tp/pp/dp split divides.
std::optional<SearchLayout> rule_of_thumb_layout(const SearchModel& m, const SearchSpace& space,
                                                 double gpu_memory_bytes);

}  // namespace shardlab::plan
