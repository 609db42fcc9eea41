// The GPT: forward and backward for one micro-batch, unit by unit (param_layout.h: embeddings,
// blocks, head). Holds the stored activations (category "activation") and backward scratch
// ("workspace") for a fixed micro-batch size B, all booked in the memory ledger. Weights and
// gradients belong to the caller and are reached through UnitAccess, so a layout decides where
// they live: one flat buffer (single process, DP), or gathered just in time and freed (ZeRO-3/FSDP).
#pragma once
#include <cstdint>
#include <vector>

#include "core/ledger.h"
#include "model/config.h"
#include "model/param_layout.h"

namespace shardlab {

// Where dropout randomness comes from for one micro-batch (see dropout.h).
struct DropoutContext {
  uint64_t seed = 0;
  uint64_t step = 0;          // optimizer step
  uint64_t first_sample = 0;  // global index of the micro-batch's first sample within the step
};

// How a layout hands the model its weights and takes its gradients, one unit at a time. Pointers
// address the unit's own range: element (flat offset o) is at ptr[o - layout.unit_begin(u)].
// Forward visits units 0…L+1, backward L+1…0; each *_done call says the unit is finished with.
template <class T>
class UnitAccess {
 public:
  virtual ~UnitAccess() = default;
  virtual const T* params(int unit, bool backward) = 0;
  virtual void params_done(int unit, bool backward) {}
  virtual T* grads(int unit) = 0;  // backward accumulates into it
  virtual void grads_done(int unit) {}
};

// The simplest layout: everything in two flat buffers.
template <class T>
class FlatAccess : public UnitAccess<T> {
 public:
  FlatAccess(const ParamLayout& layout, const T* params, T* grads) : layout_(layout), params_(params), grads_(grads) {}
  const T* params(int unit, bool) override { return params_ + layout_.unit_begin(unit); }
  T* grads(int unit) override { return grads_ + layout_.unit_begin(unit); }

 private:
  const ParamLayout& layout_;
  const T* params_;
  T* grads_;
};

template <class T>
class GPT {
 public:
  GPT(const GPTConfig& cfg, const ParamLayout& layout, int micro_batch, MemoryLedger& ledger);

  // inputs, targets (batch, T), batch ≤ micro_batch (default: all of it). Returns Σ over the
  // batch·T tokens of -log p(target) (double) and keeps activations for backward. Dropout is
  // active only when train is true.
  double forward(UnitAccess<T>& access, const int32_t* inputs, const int32_t* targets, bool train,
                 const DropoutContext& drop = {}, int batch = -1);
  // Accumulates d(loss_scale · Σ token losses)/d params into the grads. loss_scale = 1/(global batch tokens).
  void backward(UnitAccess<T>& access, T loss_scale);

  // The same on flat buffers.
  double forward(const T* params, const int32_t* inputs, const int32_t* targets, bool train,
                 const DropoutContext& drop = {}, int batch = -1) {
    FlatAccess<T> flat(layout_, params, nullptr);
    return forward(flat, inputs, targets, train, drop, batch);
  }
  void backward(T* grads, const T* params, T loss_scale) {
    FlatAccess<T> flat(layout_, params, grads);
    backward(flat, loss_scale);
  }

  // Probabilities (B, T, V) left by the last forward (for sampling).
  const T* probs() const { return logits_.data(); }
  int micro_batch() const { return B_; }
  const ParamLayout& layout() const { return layout_; }

 private:
  struct LayerActs {
    Buffer<T> ln1, ln1_mean, ln1_rstd, qkv, probs, atty, resid_mid, ln2, ln2_mean, ln2_rstd, fc, gelu;
  };
  GPTConfig cfg_;
  const ParamLayout& layout_;
  int B_;                            // capacity: the micro-batch the buffers are sized for
  int used_ = 0;                     // rows of the last forward
  std::vector<Buffer<T>> residual_;  // L+1 × (B, T, C): input of each block and the last output
  std::vector<LayerActs> acts_;
  Buffer<T> lnf_, lnf_mean_, lnf_rstd_, logits_;  // (B,T,C), (B,T), (B,T), (B,T,V)
  // backward scratch
  Buffer<T> d_res_, d_tmp_, d_ln_, d_qkv_, d_fc_, d_gelu_, att_scratch_;
  std::vector<int32_t> inputs_, targets_;
  DropoutContext drop_;
  bool train_ = false;
};

}  // namespace shardlab
