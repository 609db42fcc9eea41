// The data-parallel engine across expert-parallel ranks under ZeRO/FSDP (see data_parallel.h). Each ep rank holds
// other experts, so a store can only be sharded over the ranks that hold the same parameters: the experts' group,
// dp × cp. Its reduce-scatter sums every gradient of a shard over that group; an expert's gradient is then whole,
// but a dense tensor's still lacks the other ep ranks' samples. One all-reduce over ep of this rank's shard of the
// dense runs (purpose "dense_grads"; the ep ranks with the same dp coordinate hold the same shard boundaries, their
// layouts being alike) completes it, once per step after the last micro-batch: a sum is linear, so it may come last.
// What it costs: the dense optimizer states are sharded over dp × cp only, not dp × cp × ep, and the ring moves
// 2·(e−1)/e of the shard's dense gradients on top of the dp rings (plan --ledger checks both).
#include <algorithm>

#include "parallel/data_parallel.h"

namespace shardlab {

template <class T>
std::vector<std::pair<size_t, size_t>> DataParallel<T>::dense_runs(size_t lo, size_t hi) const {
  std::vector<std::pair<size_t, size_t>> dense;  // the padding counts as dense
  size_t at = lo;
  for (const TensorSpec& t : layout_.tensors()) {
    if (!t.expert) continue;
    const size_t a = std::max(at, t.offset), b = std::min(hi, t.offset + t.numel);
    if (a >= b) continue;
    if (at < a) dense.push_back({at, a});
    at = b;
  }
  if (at < hi) dense.push_back({at, hi});
  return dense;
}

template <class T>
void DataParallel<T>::reduce_dense_over_ep() {
  FlatStore<T>& g = states_->grads();
  all_reduce_runs(*ep_, "dense_grads", g,
                  dense_runs(std::max(shards_.my_begin(), g.begin()), std::min(shards_.my_end(), g.end())), ledger_);
}

template class DataParallel<float>;
template class DataParallel<double>;

}  // namespace shardlab
