// The sums that reach across the process grid's axes, each in one fixed, documented order, so that every
// layout adds the same numbers the same way and the loss and the gradient norm are layout-independent
// (DETERMINISM). Every sum here gathers the values and adds them in rank order — the same order on every rank:
//   loss       Σ over the tp slices (with sequence parallelism each slice holds its positions' part; without,
//              every tp rank holds the whole value: counted once), then over the cp ranks (each holds its tokens'
//              part), then over the pipeline stages (only the last computes the loss: the others add exact
//              zeros), then over the ep ranks (other samples), then over the dp ranks.
//   grad norm  Σ g² of each unit over this rank's part of it, the parts of a unit added over tp, then over the
//              shard group, then (ZeRO/FSDP with experts) over ep, then over pp (a unit lives on one stage); then
//              the units added in unit order; √.
//              The engine (data_parallel.h) computes each unit's part (a replicated tensor on tp rank 0 only).
//   replicated gradients (sequence parallelism): each tp rank's replicated tensors (LayerNorms, the
//              row-parallel biases, the embeddings and the head) saw only its positions, so their gradients are
//              partial sums: packed, one all-reduce over tp (purpose "replicated_grads", the ring's order),
//              unpacked.
#pragma once
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "comm/communicator.h"
#include "core/exact_sum.h"
#include "core/flat_store.h"
#include "core/ledger.h"
#include "model/param_layout.h"

namespace shardlab {

class GridSums {
 public:
  // Null communicators: the axis has one rank. shard: the ranks a ZeRO/FSDP store is sharded over (= dp, or
  // a node's dp ranks under hybrid).
  // shard is the grid's gradient group (dp × cp with context parallelism) or its node part.
  // ep: the expert-parallel ranks, which hold other samples (null: one). norm_over_ep: ZeRO/FSDP with experts shard
  // over dp × cp only, so a unit's parts are added over ep too (each ep rank counts its own experts).
  GridSums(Communicator* tp, Communicator* cp, Communicator* pp, Communicator* dp, Communicator* shard,
           bool sequence_parallel, Communicator* ep = nullptr, bool norm_over_ep = false)
      : tp_(tp),
        cp_(cp),
        pp_(pp),
        dp_(dp),
        shard_(shard),
        ep_(ep),
        sequence_parallel_(sequence_parallel),
        norm_over_ep_(norm_over_ep) {}

  double over_slices(double local) const;  // Σ over tp with sequence parallelism, then over cp
  double over_stages(double local) const;  // Σ over pp
  double over_ranks(double local) const;   // over_slices, over_stages, then Σ over ep, then over dp
  // The same sums, element by element (one gather per axis).
  std::vector<double> over_ranks(std::vector<double> local) const;
  // The exact mode: the same sums of order-free terms (core/exact_sum.h), merged over the same axes (any order
  // gives the same bits), rounded once. Purpose "exact_loss".
  double exact_over_slices_and_stages(ExactSum local) const;  // over_stages(over_slices(…))
  double exact_over_ranks(ExactSum local) const;
  // √(Σ over units of the unit's Σ g², each unit's parts added over tp, shard, (ep,) pp).
  double norm_of_units(std::vector<double> unit_sumsq) const;
  // The replicated tensors' gradients in [lo, hi) of the flat layout, summed over tp (the same on every tp
  // rank: their layouts and shards are alike).
  template <class T>
  void replicated_grads(FlatStore<T>& grads, const ParamLayout& layout, size_t lo, size_t hi,
                        MemoryLedger& ledger) const;

 private:
  Communicator *tp_, *cp_, *pp_, *dp_, *shard_, *ep_;
  bool sequence_parallel_, norm_over_ep_;
};

// Runs [a, b) of an array summed over a group: packed, one all-reduce (the ring's order), unpacked. at(i): element
// i's address (E: the element type on the wire).
template <class E, class At>
void all_reduce_runs(Communicator& group, const char* purpose, At&& at,
                     const std::vector<std::pair<size_t, size_t>>& runs, MemoryLedger& ledger) {
  size_t n = 0;
  for (auto [a, b] : runs) n += b - a;
  if (n == 0) return;
  Communicator::Purpose tag(group, purpose);
  Buffer<E> packed(ledger, Mem::workspace, n, 0, nullptr, false);
  size_t k = 0;
  for (auto [a, b] : runs) {
    std::memcpy(static_cast<void*>(packed.data() + k), at(a), (b - a) * sizeof(E));
    k += b - a;
  }
  group.all_reduce(packed.data(), n);
  k = 0;
  for (auto [a, b] : runs) {
    std::memcpy(static_cast<void*>(at(a)), packed.data() + k, (b - a) * sizeof(E));
    k += b - a;
  }
}

// The same over a flat store, in its stored type (bf16 or T).
template <class T>
void all_reduce_runs(Communicator& group, const char* purpose, FlatStore<T>& g,
                     const std::vector<std::pair<size_t, size_t>>& runs, MemoryLedger& ledger) {
  if (g.is_bf16())
    all_reduce_runs<bf16>(
        group, purpose, [&](size_t i) { return static_cast<bf16*>(g.raw(i)); }, runs, ledger);
  else
    all_reduce_runs<T>(
        group, purpose, [&](size_t i) { return static_cast<T*>(g.raw(i)); }, runs, ledger);
}

template <class T>
void GridSums::replicated_grads(FlatStore<T>& g, const ParamLayout& layout, size_t lo, size_t hi,
                                MemoryLedger& ledger) const {
  std::vector<std::pair<size_t, size_t>> runs;
  for (const TensorSpec& t : layout.tensors()) {
    if (!t.replicated()) continue;
    const size_t a = std::max(lo, t.offset), b = std::min(hi, t.offset + t.numel);
    if (a < b) runs.push_back({a, b});
  }
  all_reduce_runs(*tp_, "replicated_grads", g, runs, ledger);
}

}  // namespace shardlab
