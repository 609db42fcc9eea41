// How the layers split over pipeline stages (claims C20–C22): p stages, each holding v model chunks (v = 1
// except for the interleaved schedule). Model chunk k holds a contiguous run of layers, the chunks in layer
// order, and stage r holds chunks r, p + r, 2p + r, … (Megatron's virtual pipeline: a micro-batch visits
// every stage v times). The first model chunk also holds the embedding, the last the final LayerNorm, the
// head and the loss. Balanced by default (the first L mod (p·v) chunks one layer more), or per stage with
// --pp-layers 3,5,….
#pragma once
#include <string>
#include <vector>

#include "model/chunk_spec.h"
#include "parallel/schedule.h"

namespace shardlab {

struct PipelinePartition {
  int stages = 1, virtual_stages = 1;
  std::vector<ChunkSpec> chunks;  // by model chunk k = c·stages + stage
  int model_chunk(int stage, int c) const { return c * stages + stage; }
  const ChunkSpec& chunk(int stage, int c) const { return chunks[model_chunk(stage, c)]; }
  int stage_of(int k) const { return k % stages; }
  int local_index(int k) const { return k / stages; }
  // Which of the layout's units (0 embeddings, 1…L blocks, L+1 final LN + head) a stage holds.
  std::vector<bool> held_units(int stage) const;
  // How many blocks a stage holds, over all its chunks.
  int blocks_of(int stage) const {
    int n = 0;
    for (int c = 0; c < virtual_stages; ++c) n += chunk(stage, c).end_block - chunk(stage, c).first_block;
    return n;
  }
};

// --pp-layers' text form: "3,5" → {3, 5} ("" → {}, balanced). "" on success, else why not (without the flag's
// name: the command line, or the ledger check, puts it first). The one place the list is parsed.
std::string parse_layer_counts(const std::string& text, std::vector<int>* out);
std::string layer_counts_text(const std::vector<int>& counts);  // {3, 5} → "3,5"
// "" if the layers can be split this way, else one sentence naming the flag. counts: layers per stage ({}:
// balanced).
std::string pipeline_problem(int layers, int pp, int virtual_stages, ScheduleKind schedule,
                             const std::vector<int>& counts);
// The split (call after pipeline_problem returned "").
PipelinePartition partition_layers(int layers, int pp, int virtual_stages, const std::vector<int>& counts);

}  // namespace shardlab
