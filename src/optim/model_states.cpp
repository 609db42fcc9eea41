// Model-state buffers and the optimizer step over them (see model_states.h).
#include "optim/model_states.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "optim/adamw.h"
#include "optim/sgd.h"

namespace shardlab {

template <class T>
ModelStates<T>::ModelStates(const Recipe& recipe, const OptimizerSettings& optimizer, const ParamLayout& layout,
                            const ShardLayout& shards, Strategy strategy, MemoryLedger& ledger)
    : recipe_(recipe),
      optimizer_(optimizer),
      layout_(layout),
      shards_(shards),
      strategy_(strategy),
      bf16_(recipe.bf16()) {
  const size_t full = shards.padded(), sb = shards.my_begin(), S = shards.shard();
  auto range = [&](bool sharded) { return sharded ? std::make_pair(sb, S) : std::make_pair(size_t(0), full); };
  const bool shard_params = is_sharded(strategy, Mem::param), shard_grads = is_sharded(strategy, Mem::grad);
  auto [pb, pn] = range(shard_params);
  auto [gb, gn] = range(shard_grads);
  auto [ob, on] = range(is_sharded(strategy, Mem::adam_m));
  const bool bf16_grads = bf16_ && !recipe.keeps_fp32_grads();
  params_ = FlatStore<T>(ledger, Mem::param, bf16_, pb, pn);
  grads_ = FlatStore<T>(ledger, Mem::grad, bf16_grads, gb, gn);
  for (auto [category, store] : {std::pair{Mem::master, &master_}, std::pair{Mem::adam_m, &m_},
                                 std::pair{Mem::adam_v, &v_}, std::pair{Mem::momentum, &momentum_}})
    if (recipe.keeps(category)) *store = FlatStore<T>(ledger, category, false, ob, on);
  if (!shard_params) {
    if (bf16_) {
      compute_ = Buffer<T>(ledger, Mem::workspace, full);
      compute_ptr_ = compute_.data();
    } else
      compute_ptr_ = params_.t(0);
  }
  if (!shard_grads) {
    if (bf16_grads) {
      backward_ = Buffer<T>(ledger, Mem::workspace, full);
      backward_ptr_ = backward_.data();
    } else
      backward_ptr_ = grads_.t(0);
  }
  // The optimizer reads T gradients and updates T weights; scratch when the stores can't serve directly.
  const bool need_g = bf16_grads, need_w = bf16_ && !master_.exists() && shard_params;
  if (need_g || need_w) opt_scratch_ = Buffer<T>(ledger, Mem::workspace, on * (size_t(need_g) + size_t(need_w)));
}

template <class T>
void ModelStates<T>::init_weights(const GPTConfig& model, uint64_t seed) {
  // Generated for the stored range (padding stays 0).
  const size_t pb = params_.begin(), pn = params_.size();
  std::vector<T> init(pn);
  init_params(layout_, model, seed, init.data(), pb, pb + pn);
  params_.store(init.data(), pb, pb + pn);
  if (master_.exists()) params_.load(master_.t(master_.begin()), master_.begin(), master_.end());
  sync_compute(pb, pb + pn);
}

template <class T>
void ModelStates<T>::sync_compute(size_t a, size_t b) {
  if (compute_.size()) params_.load(compute_.data() + a, a, b);
}

template <class T>
void ModelStates<T>::fold_backward_grads(size_t a, size_t b) {
  if (!backward_.size()) return;  // gradients accumulate in their own store during backward
  grads_.accumulate(backward_.data() + a, a, b);
  std::memset(static_cast<void*>(backward_.data() + a), 0, (b - a) * sizeof(T));
}

template <class T>
void ModelStates<T>::zero_grads() {
  grads_.zero();
  backward_.zero();
}

template <class T>
double ModelStates<T>::grad_sumsq(size_t a, size_t b) const {
  b = std::min(b, layout_.total());
  double s = 0.0;
  if (a >= b) return s;
  const FlatStore<T>& g = grads_;
  if (g.is_bf16()) {
    const bf16* p = g.h(a);
    for (size_t i = 0; i < b - a; ++i) {
      double x = from_bf16(p[i]);
      s += x * x;
    }
  } else {
    const T* p = g.t(a);
    for (size_t i = 0; i < b - a; ++i) s += static_cast<double>(p[i]) * static_cast<double>(p[i]);
  }
  return s;
}

template <class T>
double ModelStates<T>::grad_norm() const {
  return std::sqrt(grad_sumsq(0, shards_.padded()));
}

template <class T>
void ModelStates<T>::optimizer_step(int64_t step, double lr, double grad_scale, size_t a, size_t b) {
  T* scratch = opt_scratch_.data();
  const T* g;
  if (grads_.is_bf16()) {
    grads_.load(scratch, a, b);
    g = scratch;
    scratch += b - a;
  } else
    g = grads_.t(a);
  T* w;  // the weights the optimizer updates, for [a, b)
  if (master_.exists())
    w = master_.t(a);
  else if (!bf16_)
    w = params_.t(a);
  else if (compute_.size())
    w = compute_.data() + a;  // bf16 without master: update the widened copy, round below
  else {
    params_.load(scratch, a, b);
    w = scratch;
  }
  for (const TensorSpec& t : layout_.tensors()) {
    const size_t lo = std::max(a, t.offset), hi = std::min(b, t.offset + t.numel);
    if (lo >= hi) continue;
    const double wd = t.decay ? optimizer_.weight_decay : 0.0;
    const size_t o = lo - a, n = hi - lo;
    if (m_.exists()) {  // AdamW
      AdamWParams p{lr, optimizer_.beta1, optimizer_.beta2, optimizer_.eps};
      adamw_update(w + o, g + o, m_.t(lo), v_.t(lo), n, p, wd, step, grad_scale);
    } else {
      sgd_update(w + o, g + o, momentum_.exists() ? momentum_.t(lo) : static_cast<T*>(nullptr), n, lr, recipe_.momentum,
                 wd, grad_scale);
    }
  }
  if (bf16_) {  // round the updated weights to bf16 storage; compute from exactly what is stored
    params_.store(w, a, b);
    sync_compute(a, b);
  }
}

template <class T>
std::vector<typename ModelStates<T>::StateView> ModelStates<T>::optimizer_states() {
  std::vector<StateView> v;
  if (master_.exists()) v.push_back({"master", &master_});
  if (m_.exists()) v.push_back({"adam_m", &m_});
  if (v_.exists()) v.push_back({"adam_v", &v_});
  if (momentum_.exists()) v.push_back({"momentum", &momentum_});
  return v;
}

template class ModelStates<float>;
template class ModelStates<double>;

}  // namespace shardlab
