// Resolving --resume: the run continues from the configuration its checkpoint saved, with the flags
// given now on top of it — except the ones that define the model states (shape, precision, optimizer),
// which must match what was saved. The whole parallel layout (parallel/layout.h: axes, ZeRO/FSDP, nodes,
// buckets, collectives) is the new run's to choose: checkpoints hold whole tensors; the exact mode carries over (a
// resumed --exact run stays exact unless told --exact=false), and the run's header says so. Where it writes (--out,
// --save, …) is only what its own command line says. The run keeps its identity (run id), so it may continue into
// directories of its own. And it trains on the same data: the checkpoint names its data file's bytes
// (io/data_identity.h); the checkpoint's path holding other bytes is refused, another --data named on purpose is
// trained on with a warning.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/checkpoint.h"
#include "io/data_identity.h"
#include "train/train_config.h"

namespace shardlab {

// The configuration a checkpoint (DIR or a step dir) was trained with, its model shape validated; throws
// with a clear message. data: the data it trained on (an empty sha256 where none is recorded).
TrainConfig checkpoint_config(const std::string& dir_or_step, int64_t* step = nullptr, DataIdentity* data = nullptr);

// cfg.resume names the checkpoint; args are the command line. On success cfg is the resolved
// configuration (cfg.resume the exact step directory), resume_step the checkpoint's step, and the result
// "". Reads and verifies the checkpoint — every file's checksum, every tensor's shape, dtype and finiteness
// — and throws std::runtime_error on a damaged one; returns one sentence on a configuration mismatch.
// warning: set when the run trains on other data than the checkpoint's, by its own --data.
// hold: the step resumed from, held (io/checkpoint.h) until the trainer has loaded it.
std::string resolve_resume(const std::vector<std::string>& args, TrainConfig& cfg, int64_t& resume_step,
                           std::string& warning, CheckpointHold& hold);

}  // namespace shardlab
