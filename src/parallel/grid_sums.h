// The sums that reach across the process grid's axes, each in one fixed, documented order, so that every
// layout adds the same numbers the same way and the loss and the gradient norm are layout-independent
// (DETERMINISM). Every sum here gathers the values and adds them in rank order — the same order on every rank:
//   loss       Σ over the tp slices (with sequence parallelism each slice holds its positions' part; without,
//              every tp rank holds the whole value: counted once), then over the pipeline stages (only the
//              last computes the loss: the others add exact zeros), then over the dp ranks.
//   grad norm  Σ g² of each unit over this rank's part of it, the parts of a unit added over tp, then over the
//              shard group, then over pp (a unit lives on one stage); then the units added in unit order; √.
// The engine (data_parallel.h) computes each unit's part (a replicated tensor counted on tp rank 0 only); the
// replicated tensors' gradients under sequence parallelism are summed over tp in across_tp.cpp.
#pragma once
#include <vector>

#include "comm/communicator.h"

namespace shardlab {

class GridSums {
 public:
  // Null communicators: the axis has one rank. shard: the ranks a ZeRO/FSDP store is sharded over (= dp, or
  // a node's dp ranks under hybrid).
  GridSums(Communicator* tp, Communicator* pp, Communicator* dp, Communicator* shard, bool sequence_parallel)
      : tp_(tp), pp_(pp), dp_(dp), shard_(shard), sequence_parallel_(sequence_parallel) {}

  double over_slices(double local) const;  // Σ over tp with sequence parallelism, else the value itself
  double over_stages(double local) const;  // Σ over pp
  double over_ranks(double local) const;   // over_slices, over_stages, then Σ over dp
  // √(Σ over units of the unit's Σ g², each unit's parts added over tp, shard, pp).
  double norm_of_units(std::vector<double> unit_sumsq) const;

 private:
  Communicator *tp_, *pp_, *dp_, *shard_;
  bool sequence_parallel_;
};

}  // namespace shardlab
