// Mean loss over evaluation windows (no dropout, no gradients): the validation loss of training
// and the number `shardlab eval` prints.
#pragma once
#include "io/data.h"
#include "model/model_chunk.h"
#include "parallel/data_parallel.h"
#include "parallel/pipeline.h"
#include "report/progress.h"

namespace shardlab {

// Mean per-token loss over the first min(max_windows, available) windows of `part`; max_windows ≤ 0 = all.
// Every rank of a layout runs the same windows (so sharded weights are gathered in step). With a
// progress display (`shardlab eval` of a large file), each batch of windows reports its running mean.
// The model must hold the whole GPT (embedding to head).
template <class T>
double evaluate_windows(ModelChunk<T>& model, UnitAccess<T>& weights, const TextData& data, int max_windows,
                        TextData::Part part = TextData::Part::validation, Progress* progress = nullptr);

// The same mean on a training layout (the validation loss of `train`): the windows in batches of the
// chunks' capacity through a pipeline stage's forward-only schedule — one stage and one chunk on a single
// process — the loss partials added over the stages and sequence slices. Collective over the layout.
template <class T>
double evaluate_pipeline(PipelineStage<T>& stage, DataParallel<T>& engine, const PipelinePartition& part, int capacity,
                         const TextData& data, int max_windows);

}  // namespace shardlab
