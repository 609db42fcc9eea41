// Gradient synchronisation of the data-parallel engine (see data_parallel.h):
//  - full gradients (dp, zero1): the flat gradient buffer is cut into buckets of units in backward
//    order; on the last micro-batch a bucket's all-reduce (dp) or reduce-scatter (zero1) starts as
//    soon as backward has produced its last unit, and the ring is advanced between the next units'
//    computations (C9). --overlap off runs the same rings after backward instead.
//  - sharded gradients (zero2, zero3, hybrid): each unit's gradients go to a unit-sized buffer that
//    is reduce-scattered into the owners' shards and freed, every micro-batch (C12).
// Progress model: no communication thread. The rings advance when the engine calls progress(),
// which it does at every unit boundary of forward and backward; MPI moves the bytes in between. The
// same calls move a pipeline's point-to-point messages along while a stage computes.
#include <algorithm>
#include <cstring>

#include "parallel/data_parallel.h"

namespace shardlab {

template <class T>
void DataParallel<T>::make_buckets(double bucket_mb) {
  const FlatStore<T>& g = states_->grads();
  const size_t target = std::max<size_t>(1, static_cast<size_t>(bucket_mb * 1e6 / g.elem_bytes()));
  int first_held = 0;
  while (first_held < last_held_ && !layout_.holds(first_held)) ++first_held;
  size_t hi = comm_hi(last_held_);
  for (int u = last_held_; u >= first_held; --u) {  // backward order: head, blocks L…1, embeddings
    if (!layout_.holds(u)) continue;                // another stage's unit (an empty range here)
    if (hi - comm_lo(u) >= target || u == first_held) {
      buckets_.push_back({comm_lo(u), hi, u});
      hi = comm_lo(u);
    }
  }
}

template <class T>
std::vector<typename DataParallel<T>::SyncRange> DataParallel<T>::sync_ranges(size_t lo, size_t hi) const {
  if (!experts_ || ep_sharded_) return {SyncRange{lo, hi, shard_, shards_.counts(lo, hi)}};
  std::vector<SyncRange> out;  // (DP with expert parallelism: replicated states, even chunks, no shards)
  auto add = [&](size_t a, size_t b, Communicator* group) {
    if (a >= b) return;
    if (!out.empty() && out.back().group == group && out.back().hi == a)
      out.back().hi = b;
    else
      out.push_back(SyncRange{a, b, group, {}});
  };
  size_t at = lo;
  for (const TensorSpec& t : layout_.tensors()) {
    const size_t a = std::max(lo, t.offset), b = std::min(hi, t.offset + t.numel);
    if (a >= b) continue;
    add(at, a, shard_);  // (nothing: tensors tile the layout)
    add(a, b, t.expert ? experts_ : shard_);
    at = b;
  }
  add(at, hi, shard_);  // the padding
  for (SyncRange& r : out) r.counts = r.group->even_counts(r.hi - r.lo);
  return out;
}

template <class T>
void DataParallel<T>::start_bucket(const Bucket& b, bool blocking) {
  FlatStore<T>& g = states_->grads();
  const bool reduce_scatter = strategy_ == Strategy::zero1;
  for (const SyncRange& r : sync_ranges(b.lo, b.hi)) {
    Communicator& c = *r.group;
    if (c.size() == 1) continue;  // experts with ep = the whole data-parallel width: nobody else holds them
    if (blocking) {
      if (g.is_bf16())
        reduce_scatter ? c.reduce_scatter(g.h(r.lo), r.counts) : c.all_reduce(g.h(r.lo), r.counts);
      else
        reduce_scatter ? c.reduce_scatter(g.t(r.lo), r.counts) : c.all_reduce(g.t(r.lo), r.counts);
      continue;
    }
    if (g.is_bf16())
      bucket_pending_.emplace_back(
          &c, reduce_scatter ? c.start_reduce_scatter(g.h(r.lo), r.counts) : c.start_all_reduce(g.h(r.lo), r.counts));
    else
      bucket_pending_.emplace_back(
          &c, reduce_scatter ? c.start_reduce_scatter(g.t(r.lo), r.counts) : c.start_all_reduce(g.t(r.lo), r.counts));
  }
}

template <class T>
T* DataParallel<T>::grads(int unit) {
  unit_start_us_ = trace_.now_us();
  if (exact_) return exact_unit_grads(unit);
  if (!is_sharded(strategy_, Mem::grad)) return states_->backward_grads() + comm_lo(unit);  // DP, ZeRO-1
  const size_t n = comm_hi(unit) - comm_lo(unit);
  const bool wire_bf16 = states_->grads().is_bf16();
  unit_grads_.push_back(
      UnitGrads{unit,
                Buffer<T>(ledger_, wire_bf16 ? Mem::workspace : Mem::grad, n, alignment_phase<T>(comm_lo(unit))),
                {},
                {},
                false});
  return unit_grads_.back().work.data();
}

template <class T>
void DataParallel<T>::grads_done(int unit) {
  if (trace_.enabled()) trace_.add("backward unit " + std::to_string(unit), "compute", unit_start_us_, trace_.now_us());
  const size_t lo = comm_lo(unit), hi = comm_hi(unit);
  if (exact_) {
    exact_unit_done(unit);
  } else if (!is_sharded(strategy_, Mem::grad)) {  // full gradients: fold bf16, maybe start this bucket's ring
    states_->fold_backward_grads(lo, hi);
    if (last_backward_ && overlap_)
      for (const Bucket& b : buckets_)
        if (b.last_unit == unit) start_bucket(b, false);
  } else {  // sharded gradients: this unit's buffer goes to its owners now
    UnitGrads& g = unit_grads_.back();
    const std::vector<size_t> counts = shards_.counts(lo, hi);
    if (states_->grads().is_bf16()) {
      g.wire = FlatStore<T>(ledger_, Mem::grad, true, lo, hi - lo);
      g.wire.store(g.work.data(), lo, hi);
      g.work.reset();
      g.pending = shard_->start_reduce_scatter(g.wire.h(lo), counts);
    } else {
      g.pending = shard_->start_reduce_scatter(g.work.data(), counts);
    }
    g.started = true;
    if (!overlap_) {
      shard_->wait(g.pending);
      finish_unit_grads(g);
      unit_grads_.pop_back();
    }
  }
  progress();
}

// A unit's reduce-scatter is done: add this rank's chunk into its gradient shard, free the buffers.
template <class T>
void DataParallel<T>::finish_unit_grads(UnitGrads& g) {
  const size_t lo = std::max(comm_lo(g.unit), shards_.my_begin()), hi = std::min(comm_hi(g.unit), shards_.my_end());
  if (lo < hi) {
    if (g.wire.exists()) {
      std::vector<T> chunk(hi - lo);
      g.wire.load(chunk.data(), lo, hi);
      states_->grads().accumulate(chunk.data(), lo, hi);
    } else {
      states_->grads().accumulate(g.work.data() + (lo - comm_lo(g.unit)), lo, hi);
    }
  }
  g.work.reset();
  g.wire.release();
}

template <class T>
void DataParallel<T>::progress() {
  Communicator::progress_all();  // whatever is in flight: rings, gathers, a pipeline's messages
  for (auto& [c, p] : bucket_pending_) c->progress(p);
  // Finished reductions are added to the shard in the order they started (a unit's micro-batches
  // must be summed in one fixed order), so stop at the first one still in flight.
  for (auto it = unit_grads_.begin(); it != unit_grads_.end() && it->started;) {
    if (!shard_->progress(it->pending)) break;
    finish_unit_grads(*it);
    it = unit_grads_.erase(it);
  }
  for (auto& [u, g] : gathered_)
    if (!g.ready) shard_->progress(g.pending);
}

template <class T>
void DataParallel<T>::finish_gradients() {
  Trace::Span span(trace_, "finish gradients", "comm");
  if (exact_) {
    finish_exact_gradients();
    return;
  }
  if (!is_sharded(strategy_, Mem::grad)) {
    if (!overlap_ || !last_backward_)  // nothing started during backward: sync everything now
      for (const Bucket& b : buckets_) start_bucket(b, true);
    for (auto& [c, p] : bucket_pending_) c->wait(p);
    bucket_pending_.clear();
  } else {
    for (UnitGrads& g : unit_grads_) {
      shard_->wait(g.pending);
      finish_unit_grads(g);
    }
    unit_grads_.clear();
  }
  if (across_) {  // hybrid: every node holds the node-sum of its shard; one all-reduce across nodes makes it global
    FlatStore<T>& g = states_->grads();
    if (g.is_bf16())
      across_->all_reduce(g.h(g.begin()), g.size());
    else
      across_->all_reduce(g.t(g.begin()), g.size());
  }
  if (ep_sharded_) reduce_dense_over_ep();
  if (sequence_parallel_) reduce_replicated_grads();
}

template class DataParallel<float>;
template class DataParallel<double>;

}  // namespace shardlab
