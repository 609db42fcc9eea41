// Data-parallel engine: construction, the step's bookkeeping, gradient norm, optimizer, loss
// (see data_parallel.h). Gradient synchronisation: gradient_sync.cpp; ZeRO-3 gathers: param_gather.cpp.
#include "parallel/data_parallel.h"

#include "parallel/zero_step.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace shardlab {

template <class T>
DataParallel<T>::DataParallel(const ParallelLayout& settings, const Recipe& recipe, const OptimizerSettings& optimizer,
                              const ParamLayout& layout, ProcessGrid& grid, MemoryLedger& ledger, Trace& trace)
    : layout_(layout), grid_(grid), ledger_(ledger), trace_(trace), strategy_(settings.strategy()) {
  dp_ = &grid.comm(Axis::dp);
  shard_ = &grid.grad_group();  // dp, or dp × cp
  across_ = nullptr;
  if (strategy_ == Strategy::hybrid) {
    shard_ = &grid.dp_in_node();
    across_ = &grid.dp_across_nodes();
  }
  tp_ = grid.size(Axis::tp) > 1 ? &grid.comm(Axis::tp) : nullptr;
  pp_ = grid.size(Axis::pp) > 1 ? &grid.comm(Axis::pp) : nullptr;
  cp_ = grid.size(Axis::cp) > 1 ? &grid.comm(Axis::cp) : nullptr;
  ep_ = grid.size(Axis::ep) > 1 ? &grid.comm(Axis::ep) : nullptr;
  experts_ = ep_ ? &grid.expert_grad_group() : nullptr;
  // ZeRO/FSDP with experts: shard over the ranks that hold the same parameters, the experts' group (dp × cp). The
  // reduce-scatter sums every gradient over it; the dense ones are then summed over ep on each shard (across_ep.cpp).
  ep_sharded_ = ep_ && strategy_ != Strategy::dp;
  if (ep_sharded_) shard_ = experts_;
  for (int u = 0; u < layout.units(); ++u)
    if (layout.holds(u)) last_held_ = u;  // it also carries the padding
  sequence_parallel_ = tp_ && settings.sequence_parallel;
  sums_ = std::make_unique<GridSums>(tp_, cp_, pp_, dp_, shard_, sequence_parallel_, ep_, ep_sharded_);
  for (Communicator* c :
       {dp_, shard_, across_, tp_, pp_, cp_, ep_, experts_})  // ring receive buffers show as comm_buffer in the ledger
    if (c) c->set_memory_ledger(&ledger);
  shards_ = ShardLayout(layout.total(), shard_->size(), shard_->rank());
  states_ = std::make_unique<ModelStates<T>>(recipe, optimizer, layout, shards_, strategy_, ledger);
  overlap_ = settings.overlap;
  prefetch_ = settings.prefetch;
  if (!is_sharded(strategy_, Mem::grad)) make_buckets(settings.bucket_mb);
  exact_ = settings.exact;
  if (exact_) exact_sums_ = Buffer<ExactSum>(ledger, Mem::workspace, shards_.padded(), 0, "exact.grads", false);
}

template <class T>
size_t DataParallel<T>::comm_hi(int u) const {
  return u == last_held_ ? shards_.padded() : layout_.unit_end(u);
}

template <class T>
void DataParallel<T>::begin_step() {
  states_->zero_grads();
  if (exact_) std::fill(exact_sums_.data(), exact_sums_.data() + shards_.padded(), ExactSum{});
}

template <class T>
void DataParallel<T>::begin_backward(bool last) {
  last_backward_ = last;
}

template <class T>
void DataParallel<T>::set_comm_ledger(CommLedger* ledger) {
  for (Communicator* c : {dp_, shard_, across_, tp_, pp_, cp_, ep_, experts_})
    if (c) c->set_ledger(ledger);
}

template <class T>
double DataParallel<T>::grad_norm() {
  if (exact_) return exact_grad_norm();
  // Σ g² of each unit over this rank's part of it, in flat order; grid_sums.h adds the parts over the axes.
  const int U = layout_.units();
  std::vector<double> parts(U);
  for (int u = 0; u < U; ++u)
    parts[u] = unit_grad_sumsq(u, std::max(layout_.unit_begin(u), shards_.my_begin()),
                               std::min(layout_.unit_end(u), shards_.my_end()));
  return sums_->norm_of_units(std::move(parts));
}

template <class T>
void DataParallel<T>::optimizer_step(int64_t step, double lr, double grad_scale) {
  Trace::Span span(trace_, "optimizer step", "compute");
  sharded_optimizer_step(*states_, strategy_, *shard_, step, lr, grad_scale);
}

template class DataParallel<float>;
template class DataParallel<double>;

}  // namespace shardlab
