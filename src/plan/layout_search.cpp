// plan/layout_search.cpp — the layouts of a step on N GPUs, the trainer's rules and memory per GPU (see
// layout_search.h).
#include "plan/layout_search.h"

#include <algorithm>
#include <limits>

#include "parallel/pipeline_partition.h"
#include "plan/activation_items.h"
#include "plan/pipeline_stages.h"
#include "plan/search_experts.h"
#include "plan/sharding.h"

namespace shardlab::plan {

namespace {
using u64 = std::uint64_t;

std::vector<u64> divisors(u64 n) {
  std::vector<u64> d;
  for (u64 i = 1; i * i <= n; ++i)
    if (n % i == 0) {
      d.push_back(i);
      if (i != n / i) d.push_back(n / i);
    }
  std::sort(d.begin(), d.end());
  return d;
}

int clamp_int(u64 x) { return static_cast<int>(std::min<u64>(x, std::numeric_limits<int>::max())); }
}  // namespace

std::string SearchLayout::to_string() const {
  return "dp " + std::to_string(dp) + " tp " + std::to_string(tp) + (sequence_parallel ? " SP" : "") + " pp " +
         std::to_string(pp) + " cp " + std::to_string(cp) + " ep " + std::to_string(ep) + " ZeRO-" +
         std::to_string(zero) + " b " + std::to_string(micro_batch) + " × m " + std::to_string(micro_batches) + " " +
         word_of(kRecomputeWords, recompute) + " " + word_of(kAttentionWords, attention);
}

bool SearchLayout::operator==(const SearchLayout& o) const {
  return dp == o.dp && tp == o.tp && pp == o.pp && cp == o.cp && ep == o.ep &&
         sequence_parallel == o.sequence_parallel && zero == o.zero && micro_batch == o.micro_batch &&
         micro_batches == o.micro_batches && recompute == o.recompute && attention == o.attention;
}

std::string search_layout_problem(const SearchModel& m, const SearchSpace& space, const SearchLayout& l) {
  const u64 node = std::min(space.ranks_per_node, space.gpus);  // GPUs of one node
  if (l.gpus() != space.gpus) return "dp·tp·pp·cp·ep is not the number of GPUs";
  if (m.heads % l.tp != 0) return "tp does not divide the heads";
  if (node % l.tp != 0) return "tp does not divide the GPUs of a node (tensor parallelism stays inside a node)";
  if (std::string why = pipeline_problem(clamp_int(m.layers), clamp_int(l.pp), 1, ScheduleKind::one_f_one_b, {});
      !why.empty())
    return why;
  if (l.cp > 1 && m.seq % (2 * l.cp) != 0) return "cp's 2c zigzag chunks do not divide the sequence";
  if (l.cp > 1 && l.attention == AttentionKernel::naive) return "ring attention (cp) runs on the flash kernel";
  if (l.ep > 1 && (m.experts == 0 || m.experts % l.ep != 0)) return "ep does not divide the experts";
  if (m.experts > 0 && l.cp > 1) return "experts route whole samples: no cp with them";
  if (l.sequence_parallel && l.tp < 2) return "sequence parallelism splits the sequence over tp ≥ 2";
  if (l.sequence_parallel && (m.seq / l.cp) % l.tp != 0) return "tp does not divide a cp rank's tokens (SP)";
  if (l.sequence_parallel && m.experts > 0) return "experts route whole samples: no SP with them";
  if (l.micro_batch == 0 || space.global_batch % (l.dp * l.ep * l.micro_batch) != 0)
    return "dp·ep·micro-batch does not divide the global batch";
  return "";
}

std::vector<SearchLayout> axis_factorizations(u64 gpus, bool experts) {
  std::vector<SearchLayout> out;
  for (u64 dp : divisors(gpus))
    for (u64 tp : divisors(gpus / dp))
      for (u64 pp : divisors(gpus / (dp * tp)))
        for (u64 cp : divisors(gpus / (dp * tp * pp))) {
          const u64 ep = gpus / (dp * tp * pp * cp);
          if (ep > 1 && !experts) continue;
          SearchLayout l;
          l.dp = dp, l.tp = tp, l.pp = pp, l.cp = cp, l.ep = ep;
          out.push_back(l);
        }
  return out;
}

Enumeration enumerate_layouts(const SearchModel& m, const SearchSpace& space) {
  Enumeration e;
  const std::vector<u64> batch_divisors = divisors(space.global_batch);
  for (const SearchLayout& split : axis_factorizations(space.gpus, m.experts > 0))
    for (bool sp : {false, true}) {
      if (sp && split.tp < 2) continue;  // SP splits the sequence over tp: nothing to split
      SearchLayout axes = split;
      axes.sequence_parallel = sp;
      for (int zero = 0; zero <= 3; ++zero)
        for (u64 b : batch_divisors)
          for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full})
            for (AttentionKernel a : {AttentionKernel::naive, AttentionKernel::flash}) {
              ++e.enumerated;
              SearchLayout l = axes;
              l.zero = zero, l.micro_batch = b, l.recompute = r, l.attention = a;
              if (!search_layout_problem(m, space, l).empty()) {
                ++e.divisibility;
                continue;
              }
              l.micro_batches = space.global_batch / (l.dp * l.ep * b);
              e.layouts.push_back(l);
            }
    }
  return e;
}

u64 largest_stage_blocks(const SearchModel& m, u64 pp) {
  const PipelinePartition part = partition_layers(clamp_int(m.layers), clamp_int(pp), 1, {});
  int most = 0;
  for (int stage = 0; stage < part.stages; ++stage) most = std::max(most, part.blocks_of(stage));
  return u64(most);
}

SearchMemory search_memory(const SearchModel& m, const SearchLayout& l) {
  SearchMemory mem;
  const GptDims d = m.gpt();
  const PipelinePartition part = partition_layers(clamp_int(m.layers), clamp_int(l.pp), 1, {});
  if (m.preset) {
    mem.psi_slice = m.psi / (l.tp * l.pp);  // as plan's 3D line (report/pp_report.cpp)
  } else {
    StageShape s;
    s.gpt = d, s.tp = l.tp, s.pp = clamp_int(l.pp), s.ep = l.ep;
    for (int stage = 0; stage < s.pp; ++stage) {
      const u64 psi = stage_param_count(s, stage);
      if (psi <= mem.psi_slice) continue;
      mem.psi_slice = psi, mem.stage = stage;
      const ChunkSpec& c = part.chunk(stage, 0);
      mem.psi_experts = held_expert_params(d, l.ep, u64(c.first_block), u64(c.end_block));
    }
  }
  Layout group;  // the gradient group dp·cp shards the model states (plan/memory_need.h); with experts the ranks
  group.strategy = l.strategy();  // holding the same experts (parallel/across_ep.cpp)
  group.dp = l.dp * l.cp;
  mem.model_states = per_rank_model_state_bytes(Recipe{}, mem.psi_slice, group).total();
  ActivationShape a;
  a.seq = m.seq, a.micro_batch = l.micro_batch, a.hidden = m.hidden, a.heads = m.heads, a.layers = m.layers;
  a.vocab = m.vocab, a.tp = l.tp, a.cp = l.cp, a.attention = l.attention, a.moe = d.moe;
  a.sequence_parallel = l.sequence_parallel;
  // Flash keeps no s² scores (C5): the chapter's table then drops the quadratic term as selective recompute does.
  a.recompute =
      l.attention == AttentionKernel::flash && l.recompute == Recompute::none ? Recompute::selective : l.recompute;
  const u64 dense = chapter_block_bytes(a), moe = d.moe.on() ? search_moe_block_bytes(a) : dense;
  mem.activation_per_layer = std::max(dense, moe);
  mem.in_flight = l.pp > 1 ? std::min(l.pp, l.micro_batches) : 1;
  u64 most = 0;  // the stage whose blocks keep the most
  for (int stage = 0; stage < part.stages; ++stage) {
    u64 kept = 0;
    for (int b = part.chunk(stage, 0).first_block; b < part.chunk(stage, 0).end_block; ++b)
      kept += d.moe.in_block(u64(b)) ? moe : dense;
    most = std::max(most, kept);
  }
  mem.activations = most * mem.in_flight;
  return mem;
}

}  // namespace shardlab::plan
