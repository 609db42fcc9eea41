// The GPT: forward and backward over a flat parameter buffer (param_layout.h) for one micro-batch.
// Holds the stored activations (category "activation") and backward scratch ("workspace") for a
// fixed micro-batch size B, all booked in the memory ledger. Parameters and gradients are owned by
// the caller (the trainer's model states), so any layout can hand in its own buffers.
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

template <class T>
class GPT {
 public:
  GPT(const GPTConfig& cfg, const ParamLayout& layout, int micro_batch, MemoryLedger& ledger);

  // inputs, targets (batch, T), batch ≤ micro_batch (default: all of it). Returns Σ over the
  // batch·T tokens of -log p(target) (double) and keeps activations for backward. Dropout is
  // active only when train is true.
  double forward(const T* params, const int32_t* inputs, const int32_t* targets, bool train,
                 const DropoutContext& drop = {}, int batch = -1);
  // Accumulates d(loss_scale · Σ token losses)/d params into grads. loss_scale = 1/(global batch tokens).
  void backward(T* grads, const T* params, T loss_scale);

  // Probabilities (B, T, V) left by the last forward (for sampling).
  const T* probs() const { return logits_.data(); }
  int micro_batch() const { return B_; }

 private:
  struct LayerActs {
    Buffer<T> ln1, ln1_mean, ln1_rstd, qkv, probs, atty, resid_mid, ln2, ln2_mean, ln2_rstd, fc, gelu;
  };
  GPTConfig cfg_;
  const ParamLayout& layout_;
  int B_;      // capacity: the micro-batch the buffers are sized for
  int used_ = 0;  // rows of the last forward
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
