// plan/pipeline_stages.h — pipeline parallelism's formulas (§2.4.7; claims C20–C22, C26), per stage:
// what a stage holds of the parameters (its units, with tensor parallelism its slice of them), the bytes it
// sends point to point per step, and the activation peak of its schedule — the trainer's rules
// (parallel/pipeline_partition.h splits the layers, parallel/schedule.h orders the work), so `plan --ledger`
// can compare every stage of a run exactly. The bubble is the schedule's (parallel/schedule.h).
//
// Legend: p stages, v model chunks per stage, m micro-batches per step, b micro-batch, s sequence (s/c per
// rank with context parallelism, and of those 1/t with sequence parallelism), h hidden, e bytes of a communicated
// activation (the compute type).
//   Ψ_stage = Σ of its units: embeddings V·C + T·C, a block 12C²/t + 7C/t + 6C (a MoE block: state_bytes.h's
//   block_param_count), the head 2C + C·V/t
//   point to point per step: every model chunk but the last sends m activations of b·s·h elements, every
//   one but the first m gradients of the same size (C22): b·s·h·e per micro-batch per border, p·v − 1
//   borders when interleaved (p − 1 otherwise); no collectives on pp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "parallel/pipeline_partition.h"
#include "parallel/schedule.h"
#include "plan/activation_items.h"
#include "plan/state_bytes.h"

namespace shardlab::plan {

struct StageShape {
  GptDims gpt;
  std::uint64_t tp = 1;
  bool sequence_parallel = false;
  int pp = 1, virtual_stages = 1;
  std::vector<int> pp_layers;  // layers per stage; {} balanced
  std::uint64_t cp = 1;        // context-parallel ranks: a stage sends its s/c tokens of each sample
  std::uint64_t ep = 1;        // expert-parallel ranks: a MoE block holds E/ep experts (gpt.moe)
};

PipelinePartition stage_partition(const StageShape& s);
// Σ of the units stage `stage` holds (its tp slice of them).
std::uint64_t stage_param_count(const StageShape& s, int stage);
// The largest unit (embeddings, a block, the head: their tp slice) of the units stage `stage` holds.
std::uint64_t largest_unit_param_count(const StageShape& s, int stage);
// The blocks stage `stage` holds, over all its chunks.
int stage_blocks(const StageShape& s, int stage);

// Bytes stage `stage` sends point to point per step (activations forward and gradients backward).
std::uint64_t stage_p2p_sent_bytes(const StageShape& s, int stage, std::uint64_t micro_batch,
                                   std::uint64_t micro_batches, std::uint64_t elem_bytes);

// The activation peak of a stage running `actions` (its schedule's list): the records of every micro-batch
// alive at once, item by item (plan/activation_items.h), in the model's allocation order.
std::uint64_t stage_activation_peak(const ActivationShape& a, const PipelinePartition& part, int stage,
                                    const StageActions& actions);

}  // namespace shardlab::plan
