// The training loop: one optimizer step is the chapter's step and nothing else —
//   zero grads; for each micro-batch: sample, forward, backward (scaled by 1/(global batch tokens), the
//   one loss normalisation); finish the gradient reductions; global loss and grad norm; clip; learning
//   rate; update — on whatever layout the configuration asks for (single process, DP, ZeRO, FSDP).
// Outputs (loss.csv, checkpoints, plots, ledgers, summary) belong to RunOutputs (run_outputs.h).
#pragma once
#include <cstdint>

#include "io/checkpoint.h"
#include "io/data.h"
#include "train/train_config.h"

namespace shardlab {

// cfg is validated; resume_step > 0 continues from cfg.resume, which resume_hold holds (io/checkpoint.h) and
// which is released once loaded. Collective over the world. Returns the exit code (1 when the loss stops being
// finite).
int train(const TrainConfig& cfg, int64_t resume_step, const TextData& data, CheckpointHold& resume_hold);

}  // namespace shardlab
