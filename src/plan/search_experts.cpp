// plan/search_experts.cpp — experts' memory and all-to-all time in a searched layout (see search_experts.h).
#include "plan/search_experts.h"

#include <algorithm>

#include "parallel/pipeline_partition.h"
#include "plan/ep_bytes.h"
#include "plan/moe_items.h"

namespace shardlab::plan {

namespace {
using u64 = std::uint64_t;
constexpr u64 kBf16 = 2;  // the chapter's activation and message element (C1's recipe)
}  // namespace

u64 search_moe_block_bytes(const ActivationShape& a) {
  const u64 dense = chapter_block_bytes(a);
  if (a.recompute == Recompute::full) return dense;  // the block's input alone, whatever its MLP
  const u64 sbh = a.positions() * a.micro_batch * a.hidden;
  ActivationShape whole = a;  // the MoE runs outside the tp regions, on rows every tp rank holds
  whole.tp = 1, whole.width = kBf16, whole.stat_width = kBf16;
  const u64 slots = moe_routed_slots(whole);
  u64 moe = 0;
  for (const ActivationItem& i : moe_block_items(whole, MoeRows{slots, slots, slots}))
    if (is_moe_item(i.name)) moe += i.bytes;
  return dense - 16 * sbh / a.tp + moe;
}

u64 held_expert_params(const GptDims& d, u64 ep, u64 first, u64 end) {
  u64 n = 0;
  for (u64 l = first; l < end; ++l)
    if (d.moe.in_block(l)) n += d.moe.experts / ep * expert_param_count(d);
  return n;
}

u64 largest_stage_moe_blocks(const SearchModel& m, u64 pp) {
  const ExpertDims e = m.moe();
  if (!e.on()) return 0;
  const PipelinePartition part = partition_layers(int(m.layers), int(pp), 1, {});
  u64 most = 0;
  for (int stage = 0; stage < part.stages; ++stage) {
    u64 n = 0;
    for (int b = part.chunk(stage, 0).first_block; b < part.chunk(stage, 0).end_block; ++b) n += e.in_block(u64(b));
    most = std::max(most, n);
  }
  return most;
}

EpStepTime ep_step_time(const SearchModel& m, const SearchLayout& l, const StepRates& r) {
  EpStepTime t;
  if (l.ep < 2 || m.experts == 0) return t;
  const EpLayerBytes b = ep_even_layer_bytes(m.seq / l.cp * l.micro_batch, m.top_k, m.hidden, kBf16, m.experts, l.ep);
  const bool full = l.recompute == Recompute::full;
  const u64 calls = 5 + (full ? 3 : 0);  // forward counts, dispatch, combine; backward dispatch, combine
  const double bytes = double(b.total() + (full ? b.forward() : 0));
  const double times = double(largest_stage_moe_blocks(m, l.pp) * l.micro_batches);
  t.inter = !inside_node(l.tp * l.cp * l.ep, r.ranks_per_node, l.gpus());
  t.messages = calls * u64(times);
  t.bytes = bytes * times;
  t.seconds = double(t.messages) * r.latency_s + t.bytes / (t.inter ? r.inter_bytes_per_s : r.intra_bytes_per_s);
  return t;
}

}  // namespace shardlab::plan
