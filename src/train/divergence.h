// What a run says when its numbers stop being finite: which number went first, and the settings that could
// have made it so — with their values, and first any that is implausible by a rule of its own (below), so the
// message names the setting at fault rather than always blaming --lr.
//   - the gradients of a step whose loss was finite (caught before the update they would spoil): what scales
//     the gradients (the MoE losses' weights), and after the run's first update also what sized the updates
//     that made the weights;
//   - the weights an update made (a step's loss, or the model states a save finds): what sizes an update
//     (--lr, --weight-decay, --eps);
//   - the loss of the weights the run started from, before any update: no optimizer setting.
// The rules: --lr at most 1; decoupled weight decay multiplies a weight by 1 − lr·wd per update, which must stay
// in (0, 1) (lr·wd < 1 at the peak --lr, judged where --lr is plausible); --eps a number the optimizer's type holds
// (not 0 in f32, where m/(√v + eps) divides 0 by 0 wherever a gradient is 0); --moe-aux-loss and --moe-z-loss at most 1
// (Switch uses 1e-2, ST-MoE's z-loss 1e-3). Leaves out: finding the first non-finite tensor (the save's check names
// one).
#pragma once
#include <string>

#include "train/train_config.h"

namespace shardlab {

enum class Diverged {
  gradients,  // the gradient norm of a step with a finite loss
  weights,    // what an update made: the next step's loss, or the states a save checks
  start,      // the loss of the weights the run started from
};

// The clause that follows what diverged in step `step` ("; --weight-decay 1e+300 is implausible (…); also sizing
// an update: --lr 0.004"), for a run whose first step is first_step. Ends with advice when no setting is implausible.
std::string divergence_suspects(const TrainConfig& cfg, Diverged what, int step, int first_step);

}  // namespace shardlab
