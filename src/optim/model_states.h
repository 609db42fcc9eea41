// Model states (claim C1): parameters, gradients, master weights and optimizer states of one rank,
// each a FlatStore booked in the memory ledger under its own category. Hides the precision recipe:
//   --mixed none            params/grads/states in T (f32: 4+4+4+4 = 16 B/param with AdamW)
//   --mixed bf16            bf16 params 2 + bf16 grads 2 + fp32 master 4 + m 4 + v 4 = 16 B/param
//   --grad-accum-dtype fp32 grads kept in fp32: 2 + 4 + 4 + 4 + 4 = 18 B/param (claim C3)
//   --master none           the optimizer updates the bf16 weights directly: 2 + 2 + 4 + 4 = 12
//   --optimizer sgd         one momentum state instead of m and v (none when momentum = 0)
// and the sharding (ZeRO, claim C12): each category is either the full padded buffer [0, Ψ_pad) or
// this rank's shard [m·S, (m+1)·S) (shard_layout.h), as the strategy says (strategy.h). In bf16 mode the model still
// computes in f32 (no bf16 arithmetic on this CPU): the f32 copy of the weights and the f32 buffer backward writes are
// booked as "workspace", outside the model states.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/flat_store.h"
#include "model/param_layout.h"
#include "optim/recipe.h"
#include "optim/shard_layout.h"
#include "optim/strategy.h"

namespace shardlab {

template <class T>
class ModelStates {
 public:
  // The stores the recipe keeps, full or this rank's shard as the strategy says; weights zero until
  // init_weights.
  ModelStates(const Recipe& recipe, const OptimizerSettings& optimizer, const ParamLayout& layout,
              const ShardLayout& shards, Strategy strategy, MemoryLedger& ledger);
  // Single process: nothing sharded, nothing padded.
  ModelStates(const Recipe& recipe, const OptimizerSettings& optimizer, const ParamLayout& layout, MemoryLedger& ledger)
      : ModelStates(recipe, optimizer, layout, ShardLayout(layout.total(), 1, 0), Strategy::dp, ledger) {}
  // The initial weights of this rank's range (model/param_layout.h init_params), rounded to bf16 when stored
  // so; the master starts as their exact widening, so both agree at step 0.
  void init_weights(const GPTConfig& model, uint64_t seed);

  const ShardLayout& shards() const { return shards_; }
  Strategy strategy() const { return strategy_; }
  size_t size() const { return layout_.total(); }

  FlatStore<T>& params() { return params_; }  // stored weights (full or shard)
  FlatStore<T>& grads() { return grads_; }    // stored gradients (full or shard)
  // The full T weights forward/backward read (null when params are sharded: a layout gathers units).
  const T* compute_params() const { return compute_ptr_; }
  // The full T buffer backward accumulates into (null when grads are sharded).
  T* backward_grads() { return backward_ptr_; }
  // bf16 gradients: grads[a, b) = bf16(grads + backward[a, b)), backward[a, b) = 0 (once per micro-batch).
  void fold_backward_grads(size_t a, size_t b);
  void zero_grads();
  // Refresh the f32 compute copy from the stored weights on [a, b) (after they change).
  void sync_compute(size_t a, size_t b);

  double grad_sumsq(size_t a, size_t b) const;  // Σ g² over [a, b) ∩ [0, Ψ), in flat order, in double
  // One optimizer step on the flat range [a, b) (the whole buffer, or this rank's shard); updates
  // the stored weights (and compute copy) on that range. Gradients are multiplied by grad_scale.
  void optimizer_step(int64_t step, double lr, double grad_scale, size_t a, size_t b);

  struct StateView {
    const char* kind;
    FlatStore<T>* store;
  };
  std::vector<StateView> optimizer_states();  // master, adam_m, adam_v, momentum — whichever exist

  // Convenience for a single process: everything on the whole buffer.
  double grad_norm() const;
  void optimizer_step(int64_t step, double lr, double grad_scale) {
    optimizer_step(step, lr, grad_scale, 0, shards_.padded());
  }
  void end_micro_batch() { fold_backward_grads(0, shards_.padded()); }

 private:
  Recipe recipe_;
  OptimizerSettings optimizer_;
  const ParamLayout& layout_;
  ShardLayout shards_;
  Strategy strategy_;
  bool bf16_;
  FlatStore<T> params_, grads_, master_, m_, v_, momentum_;
  Buffer<T> compute_;      // workspace: f32 copy of bf16 weights (full)
  Buffer<T> backward_;     // workspace: f32 gradients of one micro-batch when grads are stored bf16 (full)
  Buffer<T> opt_scratch_;  // workspace: widened gradients / weights for the optimizer, when needed
  const T* compute_ptr_ = nullptr;
  T* backward_ptr_ = nullptr;
};

}  // namespace shardlab
