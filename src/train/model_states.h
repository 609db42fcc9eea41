// Model states (claim C1): parameters, gradients, master weights and optimizer states of one rank,
// each a flat buffer booked in the memory ledger under its own category. Hides the precision recipe:
//   --mixed none            params/grads/states in T (f32: 4+4+4+4 = 16 B/param with AdamW)
//   --mixed bf16            bf16 params 2 + bf16 grads 2 + fp32 master 4 + m 4 + v 4 = 16 B/param
//   --grad-accum-dtype fp32 grads kept in fp32: 2 + 4 + 4 + 4 + 4 = 18 B/param (claim C3)
//   --master none           the optimizer updates the bf16 weights directly: 2 + 2 + 4 + 4 = 12
//   --optimizer sgd         one momentum state instead of m and v (none when momentum = 0)
// In bf16 mode the model still computes in f32 (there is no bf16 arithmetic on this CPU): a f32
// copy of the bf16 weights and a f32 gradient buffer for backward are booked as "workspace".
#pragma once
#include <cstdint>
#include <string>

#include "core/bf16.h"
#include "core/ledger.h"
#include "model/param_layout.h"
#include "train/train_config.h"

namespace shardlab {

template <class T>
class ModelStates {
 public:
  ModelStates(const TrainConfig& cfg, const ParamLayout& layout, MemoryLedger& ledger);

  size_t size() const { return n_; }
  bool is_bf16() const { return bf16_; }
  // What forward/backward read and write.
  const T* compute_params() const { return params_.data(); }
  T* backward_grads() { return grads_.data(); }

  void zero_grads();            // start of a step
  void end_micro_batch();       // bf16 grads: grads_bf16 = bf16(grads_bf16 + micro-batch grads)
  const T* optimizer_grads();   // the gradients the optimizer reads (widened to T if stored bf16)
  double grad_norm();           // global L2 norm of optimizer_grads(), summed in double in flat order
  // One optimizer step with learning rate lr, gradients multiplied by grad_scale (clipping).
  void optimizer_step(int64_t step, double lr, double grad_scale);

  // Checkpoint views: the stored weights and the optimizer-state buffers, by kind.
  const void* stored_params() const;
  std::string stored_params_dtype() const;  // "F32" | "F64" | "BF16"
  void* stored_params_mut();
  void sync_compute_from_stored();          // after loading stored params
  struct StateView { const char* kind; T* data; };
  std::vector<StateView> optimizer_states();  // master, adam_m, adam_v, momentum — whichever exist

 private:
  const TrainConfig& cfg_;
  const ParamLayout& layout_;
  size_t n_;
  bool bf16_, bf16_grads_, has_master_;
  Buffer<T> params_;          // compute weights: "param" (mixed none) or "workspace" (bf16)
  Buffer<bf16> params_bf16_;  // "param" in bf16 mode
  Buffer<T> grads_;           // "grad" (mixed none, or fp32 accumulation) or "workspace" (bf16 grads)
  Buffer<bf16> grads_bf16_;   // "grad" with bf16 gradient storage
  Buffer<T> master_, m_, v_, momentum_;
};

}  // namespace shardlab
