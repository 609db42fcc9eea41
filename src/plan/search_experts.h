// plan/search_experts.h — what a mixture of experts adds to a layout of `plan --search` (claim C25), at an even load
// (every expert gets s·b·k/E of a rank's slots):
//   memory      a MoE block keeps the chapter's block bytes (plan/activation_items.h's chapter_block_bytes) less the
//               dense MLP's 16·s·b·h/t (its fc and GELU outputs) plus the router's and the experts' items of
//               plan/moe_items.h in 2-byte elements (int32 arrays 4 B), with n = m = s·b·k rows; the experts stay
//               whole on every tp rank, so their rows are not divided by t. Full recompute keeps only the block's
//               input, as a dense block. The parameters a stage holds of its experts: E/ep per MoE block.
//   ep time     per MoE block and micro-batch the all-to-alls of plan/ep_bytes.h: forward counts, dispatch and
//               combine, backward dispatch and combine (full recompute: the forward's three again), each
//               α + bytes/β with bf16 rows, s·b·k·h·2·(e−1)/e bytes per dispatch or combine; all exposed (the next
//               layer needs the rows); β the intra-node link when the ep group (tp·cp·ep GPUs, tp innermost) lies
//               inside a node. Every tp rank exchanges its own copy of the rows.
// Leaves out: an uneven load (the slowest rank sets every all-to-all's pace), capacity drops, the load-balancing
// and z losses' work.
#pragma once

#include <cstdint>

#include "plan/activation_items.h"
#include "plan/layout_search.h"
#include "plan/step_time.h"

namespace shardlab::plan {

// The chapter's bytes one MoE block keeps per micro-batch for shape `a` (its tp, recompute and kernel; a.moe the
// experts), at an even load.
std::uint64_t search_moe_block_bytes(const ActivationShape& a);

// Parameters of the experts that blocks [first, end) hold on an ep rank: E/ep · (2·h·F + F + h) per MoE block.
std::uint64_t held_expert_params(const GptDims& d, std::uint64_t ep, std::uint64_t first, std::uint64_t end);

// The most MoE blocks any pipeline stage holds (1F1B's balanced split).
std::uint64_t largest_stage_moe_blocks(const SearchModel& m, std::uint64_t pp);

struct EpStepTime {
  double seconds = 0;          // exposed: all of it
  double bytes = 0;            // sent per GPU per step (= received)
  std::uint64_t messages = 0;  // all-to-all calls per step
  bool inter = false;          // the ep group spans nodes
};
// Zero for ep = 1.
EpStepTime ep_step_time(const SearchModel& m, const SearchLayout& l, const StepRates& rates);

}  // namespace shardlab::plan
