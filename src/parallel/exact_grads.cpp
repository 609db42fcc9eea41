// The data-parallel engine's exact mode (--exact, see data_parallel.h): the sums that cross samples, micro-batches,
// ranks and shards made order-free, so every layout reproduces the single process bit for bit.
//  - The model runs its products one sample at a time (model/row_split.h) and writes each sample's gradients of a
//    unit into its own copy (grads(u) + g·stride): a sample's gradient is then the same bits in every layout.
//  - grads_done(u) adds each sample's copy into this rank's order-free sums (core/exact_sum.h), one per element of
//    [0, Ψ_pad); they hold the step's sum over this rank's samples in every strategy.
//  - An expert's rows come from many samples, so the model adds each row's expert gradients into the sums directly
//    (model/moe_experts_exact.h); grads_done(u) adds only the per-sample copies of the other tensors.
//  - finish_gradients() combines the ranks' sums with collectives of ExactSum elements (32 bytes each, purpose
//    "exact_grads"): an all-reduce (DP), a reduce-scatter to the owners (ZeRO-1/2/3), or a reduce-scatter inside
//    the node and an all-reduce across nodes (hybrid) — merging is associative, so any ring order gives the same
//    bits — and rounds each element once into the gradient store. With expert parallelism: under DP each run of
//    dense tensors over dp × cp × ep and each run of experts over dp × cp (the normal mode's sync ranges); under
//    ZeRO/FSDP the reduce-scatter over dp × cp, then this rank's shard of the dense runs over ep (across_ep.cpp).
//  - The tensors whole on every tp rank (LayerNorms, the row-parallel biases, the embeddings) take each row's
//    contribution into the sums directly (model/linear_exact.h): with sequence parallelism a rank holds only some of
//    a sample's rows, so these sums are merged over tp first (purpose "replicated_grads").
//  - The gradient norm: every g² this rank counts (norm_part, across_tp.cpp: each parameter once — a tensor whole on
//    every tp rank on tp rank 0, an expert once per expert group) into one order-free sum, merged over tp, the shard
//    group, ep when sharded, and the stages (purpose "exact_norm").
// What it costs: 32 bytes per parameter for the sums (booked as workspace "exact.grads"), a copy of a unit's
// gradients per sample while it computes ("exact.sample_grads"), 4× (f64) to 8× (f32) the ring bytes, and no
// overlap of the gradient sync with backward.
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "parallel/data_parallel.h"

namespace shardlab {

namespace {
// A slice per sample, each starting at the same alignment as the unit in a whole buffer.
size_t sample_stride(size_t n, size_t elem_bytes) {
  const size_t line = kBufferAlign / elem_bytes;
  return (n + line - 1) / line * line;
}
}  // namespace

template <class T>
RowSplit DataParallel<T>::split(int unit, int samples) {
  if (!exact_) return {};
  samples_ = samples;
  return RowSplit{samples, sample_stride(comm_hi(unit) - comm_lo(unit), sizeof(T)), true};
}

template <class T>
T* DataParallel<T>::exact_unit_grads(int unit) {
  const size_t stride = sample_stride(comm_hi(unit) - comm_lo(unit), sizeof(T));
  sample_grads_ = Buffer<T>(ledger_, Mem::workspace, size_t(samples_) * stride, alignment_phase<T>(comm_lo(unit)),
                            "exact.sample_grads");
  return sample_grads_.data();
}

template <class T>
void DataParallel<T>::exact_unit_done(int unit) {
  const size_t lo = comm_lo(unit), hi = comm_hi(unit), stride = sample_stride(hi - lo, sizeof(T));
  for (const auto& [a, b] : dense_runs(lo, hi))  // the experts' gradients went into the sums directly (moe.h)
    exact_add_rows(exact_sums_.data() + a, sample_grads_.data() + (a - lo), b - a, samples_, stride);
  sample_grads_.reset();
}

template <class T>
void DataParallel<T>::finish_exact_gradients() {
  ExactSum* sums = exact_sums_.data();
  if (sequence_parallel_) {  // each tp rank added only its rows' share of the tensors whole on every tp rank
    std::vector<std::pair<size_t, size_t>> runs;
    for (const TensorSpec& t : layout_.tensors())
      if (t.replicated() && t.numel) runs.push_back({t.offset, t.offset + t.numel});
    all_reduce_runs<ExactSum>(
        *tp_, "replicated_grads", [&](size_t i) { return sums + i; }, runs, ledger_);
  }
  const size_t padded = shards_.padded();
  if (experts_ && !ep_sharded_) {  // DP with experts: the dense runs over dp × cp × ep, each expert's over dp × cp
    for (const SyncRange& r : sync_ranges(0, padded)) {
      if (r.group->size() == 1) continue;
      Communicator::Purpose tag(*r.group, "exact_grads");
      r.group->all_reduce(sums + r.lo, r.hi - r.lo);
    }
  } else if (shard_->size() == 1) {  // one process (or a group of one): nothing to combine
  } else if (strategy_ == Strategy::dp) {
    Communicator::Purpose tag(*shard_, "exact_grads");
    shard_->all_reduce(sums, padded);
  } else {
    Communicator::Purpose tag(*shard_, "exact_grads");
    shard_->reduce_scatter(sums, shards_.counts(0, padded));
    if (across_ && across_->size() > 1) {
      Communicator::Purpose tag_across(*across_, "exact_grads");
      across_->all_reduce(sums + shards_.my_begin(), shards_.my_end() - shards_.my_begin());
    }
  }
  if (ep_sharded_)  // ZeRO/FSDP with experts: my shard of the dense sums still lacks the other ep ranks' samples
    all_reduce_runs<ExactSum>(
        *ep_, "exact_grads", [&](size_t i) { return sums + i; }, dense_runs(shards_.my_begin(), shards_.my_end()),
        ledger_);
  // Each element rounded once, into the store's range (all of it under DP, this rank's shard otherwise).
  FlatStore<T>& g = states_->grads();
  const size_t lo = g.begin(), hi = g.end();
  Buffer<T> rounded(ledger_, Mem::workspace, hi - lo, alignment_phase<T>(lo), "exact.rounded", false);
  exact_round(rounded.data(), sums + lo, hi - lo);
  g.store(rounded.data(), lo, hi);
}

template <class T>
double DataParallel<T>::exact_grad_norm() {
  // Σ g² over this rank's part: under DP every rank holds every gradient, and counts its shard's range.
  const FlatStore<T>& g = states_->grads();
  const size_t lo = std::max(shards_.my_begin(), g.begin()), hi = std::min(shards_.my_end(), g.end());
  ExactSum s;
  for (const TensorSpec& t : layout_.tensors()) {
    const auto [a, b] = norm_part(t, lo, hi);
    if (a >= b) continue;
    Buffer<T> values(ledger_, Mem::workspace, b - a, alignment_phase<T>(a), "exact.norm", false);
    g.load(values.data(), a, b);
    exact_add_squares(s, values.data(), b - a);
  }
  // (hybrid: every node holds the same shards, so the node's ranks count them; the padding holds zeros)
  for (Communicator* c : {tp_, shard_, ep_sharded_ ? ep_ : nullptr, pp_}) {
    if (!c || c->size() == 1) continue;
    Communicator::Purpose tag(*c, "exact_norm");
    c->all_reduce(&s, 1);
  }
  return std::sqrt(exact_value(s));
}

template class DataParallel<float>;
template class DataParallel<double>;

}  // namespace shardlab
