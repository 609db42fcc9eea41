// plan/pipeline_stages.cpp — per-stage formulas of pipeline parallelism (see pipeline_stages.h).
#include "plan/pipeline_stages.h"

#include <algorithm>

namespace shardlab::plan {

namespace {
using u64 = std::uint64_t;
}  // namespace

PipelinePartition stage_partition(const StageShape& s) {
  return partition_layers(static_cast<int>(s.gpt.layers), s.pp, s.virtual_stages, s.pp_layers);
}

namespace {
// Each unit's parameters on one tp rank, in unit order (0 for a unit the stage does not hold).
std::vector<u64> unit_param_counts(const StageShape& s, int stage) {
  const u64 C = s.gpt.hidden, V = s.gpt.vocab, T = s.gpt.seq, t = s.tp;
  const std::vector<bool> held = stage_partition(s).held_units(stage);
  std::vector<u64> n(held.size(), 0);
  if (held[0]) n[0] = V * C + T * C;
  for (size_t l = 1; l + 1 < held.size(); ++l)
    if (held[l]) n[l] = block_param_count(s.gpt, l - 1, t, s.ep);  // 12C²/t + 7C/t + 6C when dense
  if (held.back()) n.back() = 2 * C + C * V / t;                   // ln_f and this rank's vocabulary rows of lm_head
  return n;
}
}  // namespace

u64 stage_param_count(const StageShape& s, int stage) {
  u64 n = 0;
  for (u64 u : unit_param_counts(s, stage)) n += u;
  return n;
}

u64 largest_unit_param_count(const StageShape& s, int stage) {
  const std::vector<u64> n = unit_param_counts(s, stage);
  return *std::max_element(n.begin(), n.end());
}

int stage_blocks(const StageShape& s, int stage) { return stage_partition(s).blocks_of(stage); }

u64 stage_p2p_sent_bytes(const StageShape& s, int stage, u64 b, u64 m, u64 e) {
  const PipelinePartition part = stage_partition(s);
  const u64 tokens = s.gpt.seq / s.cp;  // this rank's tokens of each sample (all of them without cp)
  const u64 positions = s.sequence_parallel ? tokens / s.tp : tokens, per = b * positions * s.gpt.hidden * e;
  const int K = static_cast<int>(part.chunks.size());
  u64 bytes = 0;
  for (int c = 0; c < part.virtual_stages; ++c) {
    const int k = part.model_chunk(stage, c);
    if (k < K - 1) bytes += m * per;  // activations to the next chunk
    if (k > 0) bytes += m * per;      // gradients to the previous one
  }
  return bytes;
}

u64 stage_activation_peak(const ActivationShape& a, const PipelinePartition& part, int stage,
                          const StageActions& actions) {
  u64 x = 0, rest = 0, head_rest = 0;  // a block's input, the rest of its record, the head's record
  for (const ActivationItem& i : block_items(a)) (i.name == "block.x" ? x : rest) += i.bytes;
  for (const ActivationItem& i : head_items(a))
    if (i.name != "head.x") head_rest += i.bytes;
  const bool full = a.recompute == Recompute::full;
  u64 alive = 0, peak = 0;
  auto add = [&](u64 bytes) { peak = std::max(peak, alive += bytes); };
  for (const Action& act : actions) {
    if (act.act != Act::forward && act.act != Act::backward) continue;
    const ChunkSpec& c = part.chunk(stage, act.chunk);
    const int n = c.end_block - c.first_block;
    if (act.act == Act::forward) {  // as ModelChunk::forward allocates
      add(x);
      for (int l = 0; l < n; ++l) {
        add(rest);
        if (l + 1 < n || c.head) add(x);  // the next block's (or the head's) input
        if (full) alive -= rest;          // full recompute keeps only the input
      }
      if (c.head) add(head_rest);
    } else {  // as ModelChunk::backward frees
      if (c.head) alive -= head_rest + x;
      for (int l = n; l-- > 0;) {
        if (full) add(rest);  // the record again, recomputed
        alive -= rest + x;
      }
    }
  }
  return peak;
}

}  // namespace shardlab::plan
