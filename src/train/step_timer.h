// train/step_timer.h — one rank's training step timed in-process on random tokens: the model states and the GPT of
// a TrainConfig, one micro-batch per step (zero grads, forward, backward, gradient norm, AdamW), one warm-up step
// first. `shardlab bench` reports it as tokens/s; `plan --calibrate` turns it into FLOP rates (alone and beside another
// rank). Leaves out: data loading, evaluation, logging, every collective (one rank).
#pragma once

#include <cstddef>

#include "train/train_config.h"

namespace shardlab {

struct StepTiming {
  double seconds = 0;                 // the cfg.run.steps timed steps, together
  std::size_t model_state_bytes = 0;  // what training kept (the memory ledger)
};

// cfg: a validated one-rank configuration; cfg.micro_batch samples per step.
StepTiming time_training_steps(const TrainConfig& cfg);

// The step's work per parameter on its own — zero the gradients, fold them, their norm, AdamW — `reps` times after
// one warm-up, on the model states of cfg's model: seconds per step, and the parameters it updated.
struct UpdateTiming {
  double seconds = 0;  // per step
  std::size_t params = 0;
};
UpdateTiming time_update_steps(const TrainConfig& cfg, int reps);

}  // namespace shardlab
