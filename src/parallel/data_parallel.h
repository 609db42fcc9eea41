// The data-parallel family on one engine (claims C7–C16): every rank holds the model (or a shard of
// it), takes its share of the global batch, and the gradients are summed over the dp group with
// hand-written ring collectives. Strategies differ only in what is sharded and when they talk:
//   dp      replicate everything; all-reduce gradients in buckets during backward (C7, C9)
//   zero1   shard optimizer states; reduce-scatter grads, update own shard, all-gather params (C12)
//   zero2   + shard gradients: reduce-scatter each unit's grads as soon as backward produces them
//   zero3   + shard params: all-gather a unit just before its forward and again before its backward,
//           free it after use, prefetching the next unit while this one computes (C14, C15)
//   hybrid  zero3 inside a node, one all-reduce of the gradient shard across nodes per step (C14)
// Every ring splits at shard boundaries (shard_layout.h), so each gradient element is summed in the
// same order in every strategy: ZeRO-1/2/3 are bit-identical to DP of the same size. The gradient
// norm and the loss are summed the same way too: per-rank partial sums, added in rank order.
// (With gradient accumulation ZeRO-2/3 reduce every micro-batch and so add micro-batches after
// ranks, DP before: equal to ~1e-16 in f64 then, not bit for bit. ZeRO-1 stays bit-identical.)
// The engine is the model's UnitAccess: it hands out weights and takes gradients unit by unit.
// With tensor parallelism the engine works on this rank's slice of the model (its local layout) over the
// dp group of ranks that hold the same slice; the loss, the gradient norm and, with sequence parallelism,
// the replicated tensors' gradients are then combined across the tp group too (across_tp.cpp). A pipeline
// stage's engine holds only its units (its layout's other units are empty); the loss and the gradient
// norm combine across the pp group. With expert parallelism dense gradients are summed over dp × ep and the experts'
// over dp; ZeRO/FSDP then shard over dp, where the same experts live (across_ep.cpp).
// --exact makes every sum across samples, micro-batches and ranks order-free, so every layout reproduces the single
// process bit for bit (exact_grads.cpp). Checkpoints of whole tensors from any layout: io/whole_checkpoint.h.
#pragma once
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "comm/process_grid.h"
#include "comm/trace.h"
#include "core/exact_sum.h"
#include "model/gpt.h"
#include "optim/model_states.h"
#include "optim/shard_layout.h"
#include "optim/strategy.h"
#include "parallel/grid_sums.h"
#include "parallel/layout.h"

namespace shardlab {

template <class T>
class DataParallel : public UnitAccess<T> {
 public:
  // This rank's model states as the recipe and the layout's strategy say, their weights zero until
  // states().init_weights (a fresh run) or io/whole_checkpoint.h's load (a resumed one).
  DataParallel(const ParallelLayout& settings, const Recipe& recipe, const OptimizerSettings& optimizer,
               const ParamLayout& layout, ProcessGrid& grid, MemoryLedger& ledger, Trace& trace);

  ModelStates<T>& states() { return *states_; }
  const ShardLayout& shards() const { return shards_; }
  Strategy strategy() const { return strategy_; }
  bool exact() const { return exact_; }
  const ParamLayout& layout() const { return layout_; }
  ProcessGrid& grid() { return grid_; }
  MemoryLedger& ledger() { return ledger_; }
  Communicator& shard_group() { return *shard_; }  // the ranks a ZeRO/FSDP store is sharded over

  void begin_step();  // zero gradients
  // Before each backward: is it the step's last backward? Then gradients sync as backward produces them
  // (keyed to the last backward, not the last forward, so schedules that run several forwards before
  // their backwards — a pipeline's 1F1B — still sync only once accumulation has ended).
  void begin_backward(bool last);
  void finish_gradients();  // every reduction done: this rank's range holds the global sums
  double grad_norm();       // the same value on every rank (grid_sums.h: the order of the sums)
  void optimizer_step(int64_t step, double lr, double grad_scale);
  // The loss (and any value) summed across the grid in its fixed order (grid_sums.h).
  const GridSums& sums() const { return *sums_; }
  // Book the engine's communication in another ledger from now on (evaluation vs training).
  void set_comm_ledger(CommLedger* ledger);

  // UnitAccess: weights for forward/backward, gradients from backward.
  const T* params(int unit, bool backward) override;
  void params_done(int unit, bool backward) override;
  T* grads(int unit) override;
  void grads_done(int unit) override;
  RowSplit split(int unit, int samples) override;  // the exact mode: one sample at a time (exact_grads.cpp)
  ExactSum* exact_sums(int unit) override { return exact_ ? exact_sums_.data() + comm_lo(unit) : nullptr; }

 private:
  struct Bucket {
    size_t lo, hi;
    int last_unit;
  };                  // a flat range synced as one; done when last_unit's backward is
  struct UnitGrads {  // ZeRO-2/3: one unit's gradients on their way to the shards
    int unit;
    Buffer<T> work;     // what backward accumulates into (T)
    FlatStore<T> wire;  // what travels: work rounded to bf16, when gradients are stored bf16
    Communicator::Pending pending;
    bool started = false;  // backward has finished the unit and its reduce-scatter is on its way
  };
  struct Gathered {      // ZeRO-3: one unit's full weights, alive while it computes
    FlatStore<T> store;  // stored dtype, gathered from every shard
    Buffer<T> compute;   // f32 copy when stored bf16
    Communicator::Pending pending;
    bool ready = false;
  };

  size_t comm_lo(int u) const { return layout_.unit_begin(u); }
  size_t comm_hi(int u) const;  // the last held unit also carries the padding, so units tile [0, Ψ_pad)
  void make_buckets(double bucket_mb);
  void start_bucket(const Bucket& b, bool blocking);
  // The pieces of [lo, hi) that reduce as one: all of it over the gradient group, or, with expert parallelism,
  // each run of expert tensors over the experts' group and each run of the rest over the gradient group.
  struct SyncRange {
    size_t lo, hi;
    Communicator* group;
    std::vector<size_t> counts;
  };
  std::vector<SyncRange> sync_ranges(size_t lo, size_t hi) const;
  void finish_unit_grads(UnitGrads& g);
  void start_gather(int unit);
  Gathered& gathered(int unit);
  void progress();
  // Across tensor-parallel ranks (across_tp.cpp): the replicated tensors' gradients with sequence
  // parallelism, a unit's part of Σ g².
  void reduce_replicated_grads();
  double unit_grad_sumsq(int unit, size_t lo, size_t hi) const;  // Σ g² of [lo, hi) ⊂ the unit, once per parameter
  // The part of tensor t whose g² this rank adds to the norm, given its part [lo, hi) of the flat range (empty if
  // another rank counts it): a tensor whole on every tp rank on tp rank 0; with experts, see across_tp.cpp.
  std::pair<size_t, size_t> norm_part(const TensorSpec& t, size_t lo, size_t hi) const;
  // ZeRO/FSDP with expert parallelism (across_ep.cpp): this rank's shard of the dense gradients summed over ep.
  void reduce_dense_over_ep();
  std::vector<std::pair<size_t, size_t>> dense_runs(size_t lo, size_t hi) const;  // [lo, hi) less the experts
  // The exact mode (exact_grads.cpp): a unit's per-sample gradients, added into the order-free sums when done; the
  // ranks' sums combined and rounded once; the norm as one order-free sum.
  T* exact_unit_grads(int unit);
  void exact_unit_done(int unit);
  void finish_exact_gradients();
  double exact_grad_norm();

  const ParamLayout& layout_;
  ProcessGrid& grid_;
  MemoryLedger& ledger_;
  Trace& trace_;
  Strategy strategy_;
  Communicator* dp_;         // every data-parallel rank: the loss
  Communicator* shard_;      // the gradient ring and the sharding group (dp × cp × ep; the node's part for hybrid;
                             // the experts' group dp × cp for ZeRO/FSDP with experts)
  Communicator* across_;     // hybrid: the same shard on every node
  Communicator* tp_;         // tensor-parallel partners (null when tp = 1)
  Communicator* pp_;         // the other pipeline stages (null when pp = 1)
  Communicator* cp_;         // context-parallel partners: the loss's other tokens (null when cp = 1)
  Communicator* ep_;         // expert-parallel partners: the loss's other samples (null when ep = 1)
  Communicator* experts_;    // expert parallelism: the ranks that hold my experts, dp × cp (null when ep = 1)
  bool ep_sharded_ = false;  // ZeRO/FSDP with experts: sharded over the experts' group, dense gradients summed over ep
  int last_held_ = 0;        // the last unit this rank holds (a stage holds some)
  bool exact_ = false;       // --exact (exact_grads.cpp)
  int samples_ = 1;          // the exact mode: samples of the micro-batch in backward
  Buffer<ExactSum> exact_sums_;  // the exact mode: every gradient of [0, Ψ_pad), summed order-free over the step
  Buffer<T> sample_grads_;       // the exact mode: one unit's gradients, a copy per sample
  bool sequence_parallel_;
  ShardLayout shards_;
  std::unique_ptr<ModelStates<T>> states_;
  std::unique_ptr<GridSums> sums_;
  bool overlap_, prefetch_, last_backward_ = false;
  std::vector<Bucket> buckets_;
  std::list<std::pair<Communicator*, Communicator::Pending>> bucket_pending_;
  std::list<UnitGrads> unit_grads_;
  std::map<int, Gathered> gathered_;
  double unit_start_us_ = 0;
};

}  // namespace shardlab
