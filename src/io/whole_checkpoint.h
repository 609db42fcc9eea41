// Checkpoints of whole tensors from any layout (see train_checkpoint.h for what a checkpoint holds). Saving
// is collective: ZeRO shards are first all-gathered inside their shard group, then every distinct slice —
// one per (pipeline stage, tensor-parallel rank), held by the ranks whose dp coordinate is 0 — travels to
// world rank 0, which puts each tensor, or each slice of one, in its place in the whole model's stores
// (model/param_layout.h place_slices) and writes them. World rank 0 knows every sender's layout from the
// model and the parallel layout alone. Loading needs no communication: each rank reads its own ranges.
#pragma once
#include <cstdint>
#include <string>

#include "io/train_checkpoint.h"
#include "parallel/data_parallel.h"
#include "parallel/layout.h"

namespace shardlab {

// Collective over the grid; world rank 0 writes DIR/step_NNNNNN; nobody returns before `latest` exists.
template <class T>
void save_whole_checkpoint(DataParallel<T>& engine, const GPTConfig& model, const ParallelLayout& layout,
                           const RunRecord& record, const std::string& dir, int64_t step);

// This rank's stores (full or a shard, of the whole model or a slice) from a checkpoint's whole tensors.
template <class T>
void load_whole_checkpoint(DataParallel<T>& engine, const std::string& dir_or_step);

}  // namespace shardlab
