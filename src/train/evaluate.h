// Mean loss over evaluation windows (no dropout, no gradients): the validation loss of training
// and the number `shardlab eval` prints.
#pragma once
#include "io/data.h"
#include "model/gpt.h"

namespace shardlab {

// Mean per-token loss over the first min(max_windows, available) windows of `part`; max_windows ≤ 0 = all.
// Every rank of a layout runs the same windows (so sharded weights are gathered in step).
template <class T>
double evaluate_windows(GPT<T>& model, UnitAccess<T>& weights, const TextData& data, int max_windows,
                        TextData::Part part = TextData::Part::validation);

}  // namespace shardlab
