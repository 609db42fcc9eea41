// Impossible sizes refused before anything is allocated: the planner's estimate of one rank's bytes
// (plan/memory_need.h: model states, activations, workspace) plus the data file, times the ranks that
// share this machine, against the memory the machine has available (/proc/meminfo MemAvailable).
// --force-memory starts the run anyway.
#pragma once
#include <string>

#include "plan/memory_need.h"
#include "train/train_config.h"

namespace shardlab {

// The estimate for cfg on a world of `world` ranks.
plan::MemoryNeed memory_need(const TrainConfig& cfg, int world);
// Bytes the machine can still give (MemAvailable), or 0 when unknown.
double available_memory_bytes();
// "" when the run fits (or --force-memory), else one sentence with both numbers and what to lower.
// whole_model: the command holds the whole model in one process (eval, sample): no layout can help.
std::string check_memory(const TrainConfig& cfg, int world, double data_bytes, bool whole_model = false);
// The same for eval and sample: one process holding the checkpoint's whole model (no optimizer states,
// no layout) and a batch of `batch` windows.
std::string check_inference_memory(const TrainConfig& checkpoint, int batch, double data_bytes, bool force_memory);
// "~42 MB per rank (model states 14 MB, activations 23 MB, workspace 5 MB)", for the run's header.
std::string memory_need_text(const TrainConfig& cfg, int world);

}  // namespace shardlab
