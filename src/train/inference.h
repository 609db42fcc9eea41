// A model built from a checkpoint's weights alone (no optimizer states), for `eval` and `sample`:
// the checkpoint's config gives the shape and dtype, every tensor is read whole — from the step the command
// holds (io/checkpoint.h CheckpointHold), the one its config came from, released once read.
#pragma once
#include <functional>
#include <string>

#include "core/ledger.h"
#include "io/checkpoint.h"
#include "io/train_checkpoint.h"
#include "model/gpt.h"
#include "optim/model_states.h"
#include "train/resume.h"
#include "train/train_config.h"

namespace shardlab {

// Loads the weights of the held step (config ck) into a fresh model of micro-batch `batch`, releases the hold
// and returns fn(model, weights).
template <class T>
int with_checkpoint_model(const TrainConfig& ck, CheckpointHold& load, int batch,
                          const std::function<int(GPT<T>&, const T*)>& fn) {
  TrainConfig cfg = ck;
  cfg.recipe.optimizer = Optimizer::sgd;  // weights only: no optimizer states to allocate
  cfg.recipe.momentum = 0;
  ParamLayout layout(cfg.model);
  MemoryLedger ledger;
  ModelStates<T> states(cfg.recipe, cfg.optimizer, layout, ledger);
  load_train_checkpoint<T>(load.step_dir(), layout, {{"model", &states.params()}});
  load.release();
  states.sync_compute(0, layout.total());
  GPT<T> model(cfg.model, layout, batch, ledger);
  return fn(model, states.compute_params());
}

// Either dtype, as the checkpoint says: fn is called with (GPT<float>&, const float*) or the double pair.
template <class F>
int with_checkpoint_model(const TrainConfig& ck, CheckpointHold& load, int batch, F&& fn) {
  if (ck.recipe.f64())
    return with_checkpoint_model<double>(ck, load, batch, std::function<int(GPT<double>&, const double*)>(fn));
  return with_checkpoint_model<float>(ck, load, batch, std::function<int(GPT<float>&, const float*)>(fn));
}

}  // namespace shardlab
