// Training checkpoints: tensors of the model states in and out of safetensors (see train_checkpoint.h).
#include "train/train_checkpoint.h"

#include <stdexcept>

#include "train/checkpoint.h"

namespace shardlab {

namespace {

template <class T>
const char* state_dtype() { return sizeof(T) == 8 ? "F64" : "F32"; }

}  // namespace

template <class T>
std::string save_train_checkpoint(const std::string& dir, int64_t step, const TrainConfig& cfg,
                                  const ParamLayout& layout, ModelStates<T>& states) {
  CheckpointFile model{"model.safetensors", {}}, optim{"optimizer.safetensors", {}};
  const std::string pd = states.stored_params_dtype();
  const char* base = static_cast<const char*>(states.stored_params());
  for (const TensorSpec& t : layout.tensors())
    model.tensors.push_back({t.name, pd, t.shape, base + t.offset * dtype_size(pd), t.numel * dtype_size(pd)});
  for (const auto& s : states.optimizer_states())
    for (const TensorSpec& t : layout.tensors())
      optim.tensors.push_back({std::string(s.kind) + "." + t.name, state_dtype<T>(), t.shape, s.data + t.offset,
                               t.numel * sizeof(T)});
  nlohmann::json meta;
  meta["config"] = cfg.to_json();
  meta["params"] = layout.total();
  meta["data_position"] = {{"step", step}, {"sampler", "rng(seed, \"data\", step)"}};
  meta["rng"] = {{"seed", cfg.seed}, {"kind", "counter-based; a pure function of (seed, what, index)"}};
  std::vector<CheckpointFile> files{model};
  if (!optim.tensors.empty()) files.push_back(optim);
  return save_checkpoint(dir, step, files, meta);
}

TrainConfig checkpoint_config(const std::string& dir_or_step, int64_t* step) {
  LoadedCheckpoint ck = load_checkpoint(dir_or_step);
  if (!ck.meta.contains("config")) throw std::runtime_error("checkpoint " + ck.path + ": meta.json has no config");
  if (step) *step = ck.meta.at("step").get<int64_t>();
  return TrainConfig::from_json(ck.meta.at("config"));
}

template <class T>
int64_t load_train_checkpoint(const std::string& dir_or_step, const ParamLayout& layout, ModelStates<T>& states,
                              bool with_optimizer) {
  LoadedCheckpoint ck = load_checkpoint(dir_or_step);
  auto file = [&](const std::string& name) -> const SafetensorsFile& {
    auto it = ck.files.find(name);
    if (it == ck.files.end()) throw std::runtime_error("checkpoint " + ck.path + " has no " + name);
    return it->second;
  };
  const SafetensorsFile& model = file("model.safetensors");
  const std::string pd = states.stored_params_dtype();
  char* base = static_cast<char*>(states.stored_params_mut());
  for (const TensorSpec& t : layout.tensors()) {
    if (model.has(t.name) && model.shape(t.name) != t.shape)
      throw std::runtime_error("checkpoint " + ck.path + ": tensor " + t.name + " has another shape than this model's");
    model.copy_to(t.name, pd, base + t.offset * dtype_size(pd), t.numel * dtype_size(pd));
  }
  states.sync_compute_from_stored();
  if (with_optimizer) {
    auto views = states.optimizer_states();
    if (!views.empty()) {
      const SafetensorsFile& optim = file("optimizer.safetensors");
      for (const auto& s : views)
        for (const TensorSpec& t : layout.tensors())
          optim.copy_to(std::string(s.kind) + "." + t.name, state_dtype<T>(), s.data + t.offset, t.numel * sizeof(T));
    }
  }
  return ck.meta.at("step").get<int64_t>();
}

template std::string save_train_checkpoint<float>(const std::string&, int64_t, const TrainConfig&, const ParamLayout&,
                                                  ModelStates<float>&);
template std::string save_train_checkpoint<double>(const std::string&, int64_t, const TrainConfig&,
                                                   const ParamLayout&, ModelStates<double>&);
template int64_t load_train_checkpoint<float>(const std::string&, const ParamLayout&, ModelStates<float>&, bool);
template int64_t load_train_checkpoint<double>(const std::string&, const ParamLayout&, ModelStates<double>&, bool);

}  // namespace shardlab
