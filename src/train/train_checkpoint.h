// What a training checkpoint holds and how the trainer writes and restores it:
//   model.safetensors      the stored weights, one tensor per parameter (F32 | F64 | BF16)
//   optimizer.safetensors  "<kind>.<name>" for kind in master, adam_m, adam_v, momentum
//   meta.json              format version, step, the full train config, data position, checksums
// The data position is the step: batches are a pure function of (seed, step) (data.h), so a
// resumed run continues bit-identically. File layout and atomicity: checkpoint.h.
#pragma once
#include <cstdint>
#include <string>

#include "model/param_layout.h"
#include "train/model_states.h"
#include "train/train_config.h"

namespace shardlab {

template <class T>
std::string save_train_checkpoint(const std::string& dir, int64_t step, const TrainConfig& cfg,
                                  const ParamLayout& layout, ModelStates<T>& states);

// Reads the config stored in a checkpoint (DIR or a step dir); throws with a clear message.
TrainConfig checkpoint_config(const std::string& dir_or_step, int64_t* step = nullptr);

// Restores weights and optimizer states; returns the checkpoint's step. Throws on any mismatch.
template <class T>
int64_t load_train_checkpoint(const std::string& dir_or_step, const ParamLayout& layout, ModelStates<T>& states,
                              bool with_optimizer);

}  // namespace shardlab
