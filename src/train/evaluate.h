// Mean loss over evaluation windows (no dropout, no gradients): the validation loss of training
// and the number `shardlab eval` prints.
#pragma once
#include <functional>

#include "io/data.h"
#include "model/model_chunk.h"
#include "report/progress.h"

namespace shardlab {

// Mean per-token loss over the first min(max_windows, available) windows of `part`; max_windows ≤ 0 = all.
// Every rank of a layout runs the same windows (so sharded weights are gathered in step). With a
// progress display (`shardlab eval` of a large file), each batch of windows reports its running mean.
// The model must hold the whole GPT (embedding to head).
// across_slices: a batch's loss summed over the ranks that hold its positions (sequence parallelism), else
// the identity.
template <class T>
double evaluate_windows(ModelChunk<T>& model, UnitAccess<T>& weights, const TextData& data, int max_windows,
                        TextData::Part part = TextData::Part::validation, Progress* progress = nullptr,
                        const std::function<double(double)>& across_slices = nullptr);

}  // namespace shardlab
