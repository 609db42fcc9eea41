// The data-parallel engine across tensor-parallel ranks (see data_parallel.h). Each tp rank holds a
// slice of every block (model/param_layout.h) and the replicated tensors whole; two things then reach
// across the tp group, each in a fixed order (the ring's for the all-reduce, tp rank order for the norm):
//  - with sequence parallelism each rank's replicated tensors saw only its positions, so their gradients are
//    partial sums: one all-reduce over tp of this rank's range of them (grid_sums.h) makes them whole;
//  - the gradient norm counts every parameter once: the slices on every tp rank, the replicated tensors
//    on tp rank 0 only (unit by unit, see grad_norm), so clipping matches the single process.
// (A checkpoint gathers every rank's slices into whole tensors: whole_checkpoint.cpp.)
#include <algorithm>

#include "parallel/data_parallel.h"

namespace shardlab {

template <class T>
void DataParallel<T>::reduce_replicated_grads() {
  // Where the gradients hold their final sums: everywhere under DP, else this rank's shard.
  const FlatStore<T>& g = states_->grads();
  const bool whole = strategy_ == Strategy::dp;
  const size_t lo = std::max(whole ? size_t(0) : shards_.my_begin(), g.begin());
  const size_t hi = std::min(whole ? shards_.padded() : shards_.my_end(), g.end());
  sums_->replicated_grads(states_->grads(), layout_, lo, hi, ledger_);
}

template <class T>
std::pair<size_t, size_t> DataParallel<T>::norm_part(const TensorSpec& t, size_t lo, size_t hi) const {
  const bool replicated_here = !tp_ || tp_->rank() == 0;  // a replicated tensor counts once: on tp rank 0
  const size_t a = std::max(lo, t.offset), b = std::min(hi, t.offset + t.numel);
  if (experts_ && t.expert) {
    if (ep_sharded_)  // my shard of my experts (every ep rank counts its own: the norm adds over ep)
      return replicated_here ? std::make_pair(a, b) : std::make_pair(a, a);
    if (experts_->rank() == 0 && replicated_here)  // my experts, whole, once per expert group (and tp)
      return {t.offset, t.offset + t.numel};
    return {a, a};
  }
  const bool dense_here = !ep_sharded_ || ep_->rank() == 0;  // sharded over dp only: every ep rank holds it
  return (!t.replicated() || replicated_here) && dense_here ? std::make_pair(a, b) : std::make_pair(a, a);
}

template <class T>
double DataParallel<T>::unit_grad_sumsq(int unit, size_t lo, size_t hi) const {
  if (!tp_ && !experts_) return lo < hi ? states_->grad_sumsq(lo, hi) : 0.0;
  double s = 0.0;
  for (const TensorSpec& t : layout_.tensors()) {
    const bool in_unit = t.offset >= layout_.unit_begin(unit) && t.offset < layout_.unit_end(unit);
    if (experts_ && t.expert && !ep_sharded_ && !in_unit) continue;  // counted whole: with its own unit
    const auto [a, b] = norm_part(t, lo, hi);
    if (a < b) s += states_->grad_sumsq(a, b);
  }
  return s;
}

template class DataParallel<float>;
template class DataParallel<double>;

}  // namespace shardlab
