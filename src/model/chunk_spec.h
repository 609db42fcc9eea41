// Which units a model chunk holds: blocks [first_block, end_block), and the embedding (unit 0) on the
// first chunk, the final LayerNorm + LM head + loss (unit L+1) on the last. The whole model is one chunk;
// a pipeline partition (parallel/pipeline_partition.h) cuts it into several.
#pragma once

#include "model/config.h"

namespace shardlab {

struct ChunkSpec {
  int first_block = 0, end_block = 0;  // blocks [first_block, end_block)
  bool embedding = true, head = true;  // holds unit 0 (embeddings) / unit L+1 (final LN + head)
  static ChunkSpec whole(const GPTConfig& cfg) { return {0, cfg.layers, true, true}; }
};

}  // namespace shardlab
