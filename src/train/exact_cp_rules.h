// What the exact mode needs of a context-parallel layout (--exact --cp c, parallel/exact_context_parallel.h): each
// cp rank runs micro-batch/c whole samples inside the tensor-parallel regions, in the rows its tokens leave free, so
// the micro-batch must be a multiple of c; and the regions' rows are whole samples, which sequence parallelism
// would cut along the sequence again. Empty if the layout is fine, else one sentence.
#pragma once
#include <string>

#include "train/train_config.h"

namespace shardlab {

inline std::string exact_cp_problem(const TrainConfig& c) {
  const ParallelLayout& l = c.layout;
  if (!l.exact || l.cp <= 1) return "";
  if (l.sequence_parallel)
    return "--exact with --cp runs each sample's products whole on one cp rank; --sequence-parallel would split "
           "them along the sequence again: drop --sequence-parallel (or --exact)";
  if (c.micro_batch % l.cp != 0)
    return "--exact with --cp " + std::to_string(l.cp) +
           " deals each micro-batch's samples out whole to the cp ranks: " + "--micro-batch " +
           std::to_string(c.micro_batch) + " is not a multiple of " + std::to_string(l.cp);
  return "";
}

}  // namespace shardlab
