// What a training checkpoint holds and how the trainer writes and restores it:
//   model.safetensors      the stored weights, one tensor per parameter (F32 | F64 | BF16)
//   optimizer.safetensors  "<kind>.<name>" for kind in master, adam_m, adam_v, momentum
//   meta.json              format version, step, the full train config, data position, checksums
// Checkpoints are layout-independent: tensors are always whole. A sharded layout saves from full
// copies it gathered, and loads by taking the slice of each tensor its stores cover.
// The data position is the step: batches are a pure function of (seed, step) (data.h), so a
// resumed run continues bit-identically. File layout and atomicity: checkpoint.h.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/flat_store.h"
#include "io/data_identity.h"
#include "model/param_layout.h"
#include "optim/model_states.h"
#include "optim/recipe.h"

namespace shardlab {

// The stores a checkpoint reads from or writes into, by kind ("model" for the weights).
template <class T>
using NamedStores = std::vector<std::pair<std::string, FlatStore<T>*>>;

template <class T>
NamedStores<T> checkpoint_stores(ModelStates<T>& states);  // params + optimizer states, as stored

// What meta.json records of the run beside the tensors: its configuration (train/train_config.h writes and
// reads it), its identity, the data file it trains on and the seed.
struct RunRecord {
  nlohmann::json config;
  std::string run_id;
  DataIdentity data;  // path, bytes and SHA-256 (io/data_identity.h), identified once per run
  uint64_t seed = 0;
};

// What save_train_checkpoint throws when a store holds NaN or Inf: a diverged step is never saved. The message
// names the step, the tensor and the checkpoint kept; what caused it is the trainer's to say (train/divergence.h).
struct DivergedStates : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Saves full stores (begin 0, covering every tensor) of the whole model (an unsliced layout; a
// tensor-parallel run assembles them first: place_slices). Returns the step directory. Throws DivergedStates.
template <class T>
std::string save_train_checkpoint(const std::string& dir, int64_t step, const RunRecord& record,
                                  const ParamLayout& layout, const NamedStores<T>& stores);

// Reads the configuration stored in a checkpoint (DIR or a step dir); throws with a clear message.
// data: the data it trained on (meta.json "data"; an empty sha256 where none is recorded).
nlohmann::json checkpoint_config_json(const std::string& dir_or_step, int64_t* step = nullptr,
                                      DataIdentity* data = nullptr);

// Checks every tensor the recipe's model states need (weights and optimizer states): present, with this
// model's shape and the expected dtype, every value finite. Throws std::runtime_error with the first
// problem. Run on every rank before any rank talks to another, so a bad checkpoint is one message.
void check_train_checkpoint(const std::string& dir_or_step, const Recipe& recipe, const ParamLayout& layout);

// Fills each store's range (full or a shard, of the whole model or a tensor-parallel slice) from the
// checkpoint's whole tensors; returns its step. Throws on any mismatch.
template <class T>
int64_t load_train_checkpoint(const std::string& dir_or_step, const ParamLayout& layout, const NamedStores<T>& stores);

}  // namespace shardlab
