// What the exact mode needs of a context-parallel layout (--exact --cp c, parallel/exact_context_parallel.h): each
// cp rank runs micro-batch/c whole samples inside the tensor-parallel regions, in the rows its tokens leave free, so
// the micro-batch must be a multiple of c; and the regions' rows are whole samples, which sequence parallelism
// would cut along the sequence again. Empty if the layout is fine, else one sentence. The trainer and `plan` ask the
// same question.
#pragma once
#include <cstdint>
#include <string>

namespace shardlab {

inline std::string exact_cp_problem(std::uint64_t cp, std::uint64_t micro_batch, bool sequence_parallel) {
  if (cp <= 1) return "";
  if (sequence_parallel)
    return "--exact with --cp runs each sample's products whole on one cp rank; --sequence-parallel would split "
           "them along the sequence again: drop --sequence-parallel (or --exact)";
  if (micro_batch % cp != 0)
    return "--exact with --cp " + std::to_string(cp) +
           " deals each micro-batch's samples out whole to the cp ranks: " + "--micro-batch " +
           std::to_string(micro_batch) + " is not a multiple of " + std::to_string(cp);
  return "";
}

}  // namespace shardlab
