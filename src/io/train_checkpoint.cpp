// Training checkpoints: model-state stores in and out of safetensors (see train_checkpoint.h).
#include "io/train_checkpoint.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "io/checkpoint.h"
#include "io/data_identity.h"

namespace shardlab {

namespace {

template <class T>
std::string store_dtype(const FlatStore<T>& s) {
  if (s.is_bf16()) return "BF16";
  return sizeof(T) == 8 ? "F64" : "F32";
}

std::string tensor_name(const std::string& kind, const std::string& name) {
  return kind == "model" ? name : kind + "." + name;
}

// The first element of a tensor's bytes that is NaN or ±Inf, or -1: a checkpoint never holds them.
long first_non_finite(const std::string& dtype, const unsigned char* data, size_t bytes) {
  if (dtype == "BF16") {
    const size_t n = bytes / 2;
    for (size_t i = 0; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, data + 2 * i, 2);
      if ((h & 0x7f80u) == 0x7f80u) return static_cast<long>(i);  // exponent all ones
    }
  } else if (dtype == "F32") {
    for (size_t i = 0; i < bytes / 4; ++i) {
      float f;
      std::memcpy(&f, data + 4 * i, 4);
      if (!std::isfinite(f)) return static_cast<long>(i);
    }
  } else {
    for (size_t i = 0; i < bytes / 8; ++i) {
      double d;
      std::memcpy(&d, data + 8 * i, 8);
      if (!std::isfinite(d)) return static_cast<long>(i);
    }
  }
  return -1;
}

size_t whole_numel(const TensorSpec& t) {
  size_t n = 1;
  for (int64_t d : t.global_shape) n *= static_cast<size_t>(d);
  return n;
}

}  // namespace

template <class T>
NamedStores<T> checkpoint_stores(ModelStates<T>& states) {
  NamedStores<T> s{{"model", &states.params()}};
  for (const auto& v : states.optimizer_states()) s.push_back({v.kind, v.store});
  return s;
}

template <class T>
std::string save_train_checkpoint(const std::string& dir, int64_t step, const RunRecord& record,
                                  const ParamLayout& layout, const NamedStores<T>& stores) {
  CheckpointFile model{"model.safetensors", {}}, optim{"optimizer.safetensors", {}};
  for (const auto& [kind, store] : stores) {
    const std::string dt = store_dtype(*store);
    if (store->begin() != 0 || store->size() < layout.total())
      throw std::logic_error("save_train_checkpoint needs whole stores; gather shards first");
    if (layout.slice().tp != 1) throw std::logic_error("save_train_checkpoint needs the whole model's layout");
    for (const TensorSpec& t : layout.tensors()) {
      const size_t bytes = t.numel * store->elem_bytes();
      const auto* data = static_cast<const unsigned char*>(store->raw(t.offset));
      // A diverged step is never saved: it would become `latest` (and --keep-last would prune the last good
      // step for it), yet no load accepts it.
      if (const long bad = first_non_finite(dt, data, bytes); bad >= 0) {
        const std::vector<int64_t> kept = checkpoint_steps(dir);
        throw DivergedStates(
            "the model states became NaN or Inf in step " + std::to_string(step) + " (" + tensor_name(kind, t.name) +
            ", element " + std::to_string(bad) + "): step " + std::to_string(step) + " is not saved" +
            (kept.empty() ? std::string()
                          : "; the newest checkpoint, " + dir + "/" + step_dir_name(kept.back()) + ", is kept"));
      }
      (kind == "model" ? model : optim).tensors.push_back({tensor_name(kind, t.name), dt, t.shape, data, bytes});
    }
  }
  nlohmann::json meta;
  meta["config"] = record.config;
  meta["params"] = layout.total();
  meta["run_id"] = record.run_id;
  meta["data"] = record.data.to_json();  // which bytes it trained on
  meta["data_position"] = {{"step", step}, {"sampler", "rng(seed, \"data\", step)"}};
  meta["rng"] = {{"seed", record.seed}, {"kind", "counter-based; a pure function of (seed, what, index)"}};
  std::vector<CheckpointFile> files{model};
  if (!optim.tensors.empty()) files.push_back(optim);
  return save_checkpoint(dir, step, files, meta);
}

nlohmann::json checkpoint_config_json(const std::string& dir_or_step, int64_t* step, DataIdentity* data) {
  LoadedCheckpoint ck = load_checkpoint(dir_or_step);
  if (!ck.meta.contains("config")) throw std::runtime_error("checkpoint " + ck.path + ": meta.json has no config");
  if (step) *step = ck.meta.at("step").get<int64_t>();
  if (data) *data = DataIdentity::from_json(ck.meta.contains("data") ? ck.meta["data"] : nlohmann::json());
  return ck.meta.at("config");
}

namespace {
// meta.json's parameter count is checked, not trusted: it must be the count of the model file's own tensors (a count
// off by one is a damaged or edited meta.json, even where every tensor's shape still matches the model).
void check_param_count(const LoadedCheckpoint& ck) {
  if (!ck.meta.contains("params")) return;  // written before the count was recorded
  const auto model = ck.files.find("model.safetensors");
  if (model == ck.files.end()) return;  // the callers say that it is missing
  uint64_t held = 0;
  for (const std::string& name : model->second.names()) {
    uint64_t n = 1;
    for (int64_t d : model->second.shape(name)) n *= uint64_t(d);
    held += n;
  }
  const nlohmann::json& p = ck.meta["params"];
  if (!p.is_number_unsigned() || p.get<uint64_t>() != held)
    throw std::runtime_error("checkpoint " + ck.path + ": meta.json says " + p.dump() +
                             " parameters, but its model.safetensors holds " + std::to_string(held));
}
}  // namespace

void check_train_checkpoint(const std::string& dir_or_step, const Recipe& recipe, const ParamLayout& layout) {
  LoadedCheckpoint ck = load_checkpoint(dir_or_step);
  check_param_count(ck);
  const std::string full = recipe.f64() ? "F64" : "F32", model = recipe.bf16() ? "BF16" : full;
  std::vector<std::pair<std::string, std::string>> kinds = {{"model", model}};  // kind, dtype
  for (Mem c : kOptimizerStates)
    if (recipe.keeps(c)) kinds.push_back({mem_name(c), full});
  std::vector<unsigned char> tensor;
  for (const auto& [kind, dtype] : kinds) {
    const std::string file = kind == "model" ? "model.safetensors" : "optimizer.safetensors";
    auto it = ck.files.find(file);
    if (it == ck.files.end()) throw std::runtime_error("checkpoint " + ck.path + " has no " + file);
    for (const TensorSpec& t : layout.tensors()) {
      const std::string name = tensor_name(kind, t.name);
      if (!it->second.has(name)) throw std::runtime_error("checkpoint " + ck.path + ": no tensor " + name);
      if (it->second.shape(name) != t.global_shape)
        throw std::runtime_error("checkpoint " + ck.path + ": tensor " + name + " has another shape than this model's");
      tensor.resize(whole_numel(t) * dtype_size(dtype));
      it->second.copy_to(name, dtype, tensor.data(), tensor.size());
      if (const long bad = first_non_finite(dtype, tensor.data(), tensor.size()); bad >= 0)
        throw std::runtime_error("checkpoint " + ck.path + ": tensor " + name + " holds NaN or Inf (element " +
                                 std::to_string(bad) + "); a checkpoint of a diverged run cannot be used");
    }
  }
}

template <class T>
int64_t load_train_checkpoint(const std::string& dir_or_step, const ParamLayout& layout, const NamedStores<T>& stores) {
  LoadedCheckpoint ck = load_checkpoint(dir_or_step);
  check_param_count(ck);
  std::vector<unsigned char> tensor;
  for (const auto& [kind, store] : stores) {
    const std::string file = kind == "model" ? "model.safetensors" : "optimizer.safetensors";
    auto it = ck.files.find(file);
    if (it == ck.files.end()) throw std::runtime_error("checkpoint " + ck.path + " has no " + file);
    const SafetensorsFile& f = it->second;
    const std::string dt = store_dtype(*store);
    const size_t eb = store->elem_bytes();
    for (const TensorSpec& t : layout.tensors()) {
      const size_t lo = std::max(store->begin(), t.offset), hi = std::min(store->end(), t.offset + t.numel);
      if (lo >= hi) continue;  // not in this rank's shard
      const std::string name = tensor_name(kind, t.name);
      if (f.has(name) && f.shape(name) != t.global_shape)
        throw std::runtime_error("checkpoint " + ck.path + ": tensor " + name + " has another shape than this model's");
      tensor.resize(whole_numel(t) * eb);
      f.copy_to(name, dt, tensor.data(), tensor.size());
      if (const long bad = first_non_finite(dt, tensor.data(), tensor.size()); bad >= 0)
        throw std::runtime_error("checkpoint " + ck.path + ": tensor " + name + " holds NaN or Inf (element " +
                                 std::to_string(bad) + "); a checkpoint of a diverged run cannot be used");
      // This rank's slice of the whole tensor (all of it without tensor parallelism), then its shard range.
      for_each_run(t, [&](size_t local, size_t whole, size_t count) {
        const size_t a = std::max(lo, t.offset + local), b = std::min(hi, t.offset + local + count);
        if (a < b) std::memcpy(store->raw(a), tensor.data() + (whole + a - t.offset - local) * eb, (b - a) * eb);
      });
    }
  }
  return ck.meta.at("step").get<int64_t>();
}

template NamedStores<float> checkpoint_stores<float>(ModelStates<float>&);
template NamedStores<double> checkpoint_stores<double>(ModelStates<double>&);
template std::string save_train_checkpoint<float>(const std::string&, int64_t, const RunRecord&, const ParamLayout&,
                                                  const NamedStores<float>&);
template std::string save_train_checkpoint<double>(const std::string&, int64_t, const RunRecord&, const ParamLayout&,
                                                   const NamedStores<double>&);
template int64_t load_train_checkpoint<float>(const std::string&, const ParamLayout&, const NamedStores<float>&);
template int64_t load_train_checkpoint<double>(const std::string&, const ParamLayout&, const NamedStores<double>&);

}  // namespace shardlab
