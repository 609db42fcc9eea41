// ZeRO-3 / FSDP parameter gathering (see data_parallel.h): a unit's weights exist in full only
// while it computes. params(u) waits for (or starts) the all-gather of unit u from every shard and,
// with --prefetch on, starts gathering the next unit (u+1 in forward, u-1 in backward) so its ring
// runs while u computes (C15). params_done(u) frees the unit again. Without sharded parameters the
// engine simply points into the full weights.
#include <cstring>

#include "parallel/data_parallel.h"

namespace shardlab {

template <class T>
void DataParallel<T>::start_gather(int unit) {
  const size_t lo = comm_lo(unit), hi = comm_hi(unit);
  FlatStore<T>& shard = states_->params();
  Gathered& g = gathered_[unit];
  g.store = FlatStore<T>(ledger_, Mem::param, shard.is_bf16(), lo, hi - lo);
  g.ready = false;
  const size_t a = std::max(lo, shard.begin()), b = std::min(hi, shard.end());  // my chunk of this unit
  if (a < b) std::memcpy(g.store.raw(a), shard.raw(a), (b - a) * shard.elem_bytes());
  const std::vector<size_t> counts = shards_.counts(lo, hi);
  g.pending = g.store.is_bf16() ? shard_->start_all_gather(g.store.h(lo), counts)
                                : shard_->start_all_gather(g.store.t(lo), counts);
}

template <class T>
typename DataParallel<T>::Gathered& DataParallel<T>::gathered(int unit) {
  if (!gathered_.count(unit)) start_gather(unit);
  Gathered& g = gathered_[unit];
  if (!g.ready) {
    shard_->wait(g.pending);
    if (g.store.is_bf16()) {  // compute in f32 from exactly the stored bf16 weights
      const size_t lo = g.store.begin(), hi = g.store.end();
      g.compute = Buffer<T>(ledger_, Mem::workspace, hi - lo, alignment_phase<T>(lo));
      g.store.load(g.compute.data(), lo, hi);
    }
    g.ready = true;
  }
  return g;
}

template <class T>
const T* DataParallel<T>::params(int unit, bool backward) {
  if (!is_sharded(strategy_, Mem::param)) {  // DP, ZeRO-1, ZeRO-2: every weight is here
    if (!backward) unit_start_us_ = trace_.now_us();
    return states_->compute_params() + comm_lo(unit);
  }
  Gathered& g = gathered(unit);
  const int next = backward ? unit - 1 : unit + 1;
  if (prefetch_ && next >= 0 && next < layout_.units() && layout_.holds(next) && !gathered_.count(next))
    start_gather(next);
  if (!backward) unit_start_us_ = trace_.now_us();  // the unit computes from here (its gather is done)
  return g.store.is_bf16() ? g.compute.data() : g.store.t(g.store.begin());
}

template <class T>
void DataParallel<T>::params_done(int unit, bool backward) {
  if (!backward && trace_.enabled())
    trace_.add("forward unit " + std::to_string(unit), "compute", unit_start_us_, trace_.now_us());
  if (is_sharded(strategy_, Mem::param)) gathered_.erase(unit);  // free the unit's full weights
  progress();
}

template class DataParallel<float>;
template class DataParallel<double>;

}  // namespace shardlab
