// Model-state buffers and the optimizer step over them (see model_states.h).
#include "train/model_states.h"

#include <cmath>
#include <cstring>

#include "optim/adamw.h"
#include "optim/sgd.h"

namespace shardlab {

template <class T>
ModelStates<T>::ModelStates(const TrainConfig& cfg, const ParamLayout& layout, MemoryLedger& ledger)
    : cfg_(cfg), layout_(layout), n_(layout.total()) {
  bf16_ = cfg.mixed == "bf16";
  bf16_grads_ = bf16_ && cfg.grad_accum_dtype == "bf16";
  has_master_ = bf16_ && cfg.master == "fp32";
  params_ = Buffer<T>(ledger, bf16_ ? Mem::workspace : Mem::param, n_);
  if (bf16_) params_bf16_ = Buffer<bf16>(ledger, Mem::param, n_);
  grads_ = Buffer<T>(ledger, bf16_grads_ ? Mem::workspace : Mem::grad, n_);
  if (bf16_grads_) grads_bf16_ = Buffer<bf16>(ledger, Mem::grad, n_);
  if (has_master_) master_ = Buffer<T>(ledger, Mem::master, n_);
  if (cfg.optimizer == "adamw") {
    m_ = Buffer<T>(ledger, Mem::adam_m, n_);
    v_ = Buffer<T>(ledger, Mem::adam_v, n_);
  } else if (cfg.momentum > 0) {
    momentum_ = Buffer<T>(ledger, Mem::momentum, n_);
  }
  // Initial weights: generated in T, then (bf16) rounded; the master starts as the rounded value's exact widening
  // so master and bf16 weights agree at step 0.
  init_params(layout, cfg.model, cfg.seed, params_.data(), 0, n_);
  if (bf16_) {
    for (size_t i = 0; i < n_; ++i) params_bf16_[i] = to_bf16(static_cast<float>(params_[i]));
    sync_compute_from_stored();
  }
  if (has_master_) std::memcpy(master_.data(), params_.data(), n_ * sizeof(T));
}

template <class T>
void ModelStates<T>::zero_grads() {
  grads_.zero();
  if (bf16_grads_) grads_bf16_.zero();
}

template <class T>
void ModelStates<T>::end_micro_batch() {
  if (!bf16_grads_) return;  // f32/f64 gradients accumulate in place during backward
  for (size_t i = 0; i < n_; ++i) grads_bf16_[i] = to_bf16(from_bf16(grads_bf16_[i]) + static_cast<float>(grads_[i]));
  grads_.zero();
}

template <class T>
const T* ModelStates<T>::optimizer_grads() {
  if (bf16_grads_)
    for (size_t i = 0; i < n_; ++i) grads_[i] = static_cast<T>(from_bf16(grads_bf16_[i]));
  return grads_.data();
}

template <class T>
double ModelStates<T>::grad_norm() {
  const T* g = optimizer_grads();
  double s = 0.0;
  for (size_t i = 0; i < n_; ++i) s += static_cast<double>(g[i]) * static_cast<double>(g[i]);
  return std::sqrt(s);
}

template <class T>
void ModelStates<T>::optimizer_step(int64_t step, double lr, double grad_scale) {
  const T* g = grads_.data();  // optimizer_grads() was called by grad_norm()
  T* w = has_master_ ? master_.data() : params_.data();
  for (const TensorSpec& t : layout_.tensors()) {
    const double wd = t.decay ? cfg_.weight_decay : 0.0;
    const size_t o = t.offset;
    if (cfg_.optimizer == "adamw") {
      AdamWParams p{lr, cfg_.beta1, cfg_.beta2, cfg_.eps};
      adamw_update(w + o, g + o, m_.data() + o, v_.data() + o, t.numel, p, wd, step, grad_scale);
    } else {
      sgd_update(w + o, g + o, momentum_.size() ? momentum_.data() + o : static_cast<T*>(nullptr), t.numel, lr,
                 cfg_.momentum, wd, grad_scale);
    }
  }
  if (bf16_) {  // round the updated weights to bf16 storage; compute from exactly what is stored
    for (size_t i = 0; i < n_; ++i) params_bf16_[i] = to_bf16(static_cast<float>(w[i]));
    sync_compute_from_stored();
  }
}

template <class T>
const void* ModelStates<T>::stored_params() const {
  return bf16_ ? static_cast<const void*>(params_bf16_.data()) : static_cast<const void*>(params_.data());
}
template <class T>
void* ModelStates<T>::stored_params_mut() {
  return bf16_ ? static_cast<void*>(params_bf16_.data()) : static_cast<void*>(params_.data());
}

template <class T>
std::string ModelStates<T>::stored_params_dtype() const {
  if (bf16_) return "BF16";
  return sizeof(T) == 8 ? "F64" : "F32";
}

template <class T>
void ModelStates<T>::sync_compute_from_stored() {
  if (!bf16_) return;
  for (size_t i = 0; i < n_; ++i) params_[i] = static_cast<T>(from_bf16(params_bf16_[i]));
}

template <class T>
std::vector<typename ModelStates<T>::StateView> ModelStates<T>::optimizer_states() {
  std::vector<StateView> v;
  if (master_.size()) v.push_back({"master", master_.data()});
  if (m_.size()) v.push_back({"adam_m", m_.data()});
  if (v_.size()) v.push_back({"adam_v", v_.data()});
  if (momentum_.size()) v.push_back({"momentum", momentum_.data()});
  return v;
}

template class ModelStates<float>;
template class ModelStates<double>;

}  // namespace shardlab
