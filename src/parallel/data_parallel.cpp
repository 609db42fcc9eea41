// Data-parallel engine: construction, the step's bookkeeping, gradient norm, optimizer, loss
// (see data_parallel.h). Gradient synchronisation: gradient_sync.cpp; ZeRO-3 gathers: param_gather.cpp.
#include "parallel/data_parallel.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

namespace shardlab {

template <class T>
DataParallel<T>::DataParallel(const ParallelLayout& settings, const Recipe& recipe, const OptimizerSettings& optimizer,
                              const ParamLayout& layout, ProcessGrid& grid, MemoryLedger& ledger, Trace& trace)
    : layout_(layout), grid_(grid), ledger_(ledger), trace_(trace), strategy_(settings.strategy()) {
  dp_ = &grid.comm(Axis::dp);
  shard_ = dp_;
  across_ = nullptr;
  if (strategy_ == Strategy::hybrid) {
    shard_ = &grid.dp_in_node();
    across_ = &grid.dp_across_nodes();
  }
  tp_ = grid.size(Axis::tp) > 1 ? &grid.comm(Axis::tp) : nullptr;
  pp_ = grid.size(Axis::pp) > 1 ? &grid.comm(Axis::pp) : nullptr;
  for (int u = 0; u < layout.units(); ++u)
    if (layout.holds(u)) last_held_ = u;  // it also carries the padding
  sequence_parallel_ = tp_ && settings.sequence_parallel;
  for (Communicator* c : {dp_, shard_, across_, tp_, pp_})  // ring receive buffers show as comm_buffer in the ledger
    if (c) c->set_memory_ledger(&ledger);
  shards_ = ShardLayout(layout.total(), shard_->size(), shard_->rank());
  states_ = std::make_unique<ModelStates<T>>(recipe, optimizer, layout, shards_, strategy_, ledger);
  overlap_ = settings.overlap;
  prefetch_ = settings.prefetch;
  if (!is_sharded(strategy_, Mem::grad)) make_buckets(settings.bucket_mb);
}

template <class T>
size_t DataParallel<T>::comm_hi(int u) const {
  return u == last_held_ ? shards_.padded() : layout_.unit_end(u);
}

template <class T>
void DataParallel<T>::begin_step() {
  states_->zero_grads();
}

template <class T>
void DataParallel<T>::begin_backward(bool last) {
  last_backward_ = last;
}

template <class T>
double DataParallel<T>::sum_over_slices(double local) {
  if (!sequence_parallel_) return local;
  double total = 0.0;
  for (double v : tp_->all_gather_value(local)) total += v;
  return total;
}

template <class T>
double DataParallel<T>::sum_over_stages(double local) {
  if (!pp_) return local;
  double total = 0.0;  // only the last stage has the loss: the others add exact zeros
  for (double v : pp_->all_gather_value(local)) total += v;
  return total;
}

template <class T>
double DataParallel<T>::sum_over_ranks(double local) {
  local = sum_over_stages(sum_over_slices(local));
  double total = 0.0;
  for (double v : dp_->all_gather_value(local)) total += v;  // rank order: the same sum everywhere, every layout
  return total;
}

template <class T>
void DataParallel<T>::set_comm_ledger(CommLedger* ledger) {
  for (Communicator* c : {dp_, shard_, across_, tp_, pp_})
    if (c) c->set_ledger(ledger);
}

template <class T>
double DataParallel<T>::grad_norm() {
  // Layout-independent arithmetic: Σ g² of each unit over this rank's part of it (in flat order), the
  // parts of a unit added over tp ranks and then over the shard group in rank order, then the units added
  // in unit order — the same sums whether the units live on one process, on dp shards, tp slices or
  // pipeline stages (over pp each unit has one owner), so clipping is identical wherever the gradients are.
  const int U = layout_.units();
  std::vector<double> parts(U);
  for (int u = 0; u < U; ++u)
    parts[u] = unit_grad_sumsq(u, std::max(layout_.unit_begin(u), shards_.my_begin()),
                               std::min(layout_.unit_end(u), shards_.my_end()));
  auto add_over = [&](Communicator* group) {
    if (!group || group->size() == 1) return;
    const std::vector<double> all = group->all_gather_values(parts);
    for (int u = 0; u < U; ++u) {
      parts[u] = 0.0;
      for (int r = 0; r < group->size(); ++r) parts[u] += all[size_t(r) * U + u];
    }
  };
  add_over(tp_);
  add_over(shard_);
  add_over(pp_);  // a unit lives on one stage: the other stages add exact zeros
  double total = 0.0;
  for (double p : parts) total += p;
  return std::sqrt(total);
}

template <class T>
void DataParallel<T>::optimizer_step(int64_t step, double lr, double grad_scale) {
  Trace::Span span(trace_, "optimizer step", "compute");
  if (strategy_ == Strategy::dp) {  // every replica applies the same update to everything
    states_->optimizer_step(step, lr, grad_scale, 0, shards_.padded());
    return;
  }
  states_->optimizer_step(step, lr, grad_scale, shards_.my_begin(), shards_.my_end());
  if (strategy_ == Strategy::zero1 || strategy_ == Strategy::zero2) {  // every rank needs every updated weight
    FlatStore<T>& p = states_->params();
    const std::vector<size_t> counts = shards_.counts(0, shards_.padded());
    if (p.is_bf16())
      shard_->all_gather(p.h(0), counts);
    else
      shard_->all_gather(p.t(0), counts);
    states_->sync_compute(0, shards_.padded());
  }
}

template class DataParallel<float>;
template class DataParallel<double>;

}  // namespace shardlab
