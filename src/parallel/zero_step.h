// The textbook piece of ZeRO (claims C12–C14), alone in one file so that another implementation can take its
// place (a seam: `make seam SEAM=src/parallel/zero_step.cpp WITH=FILE`, docs/architecture.md): the optimizer
// step of one data-parallel rank once its gradients are reduced — summed over the group into its shard
// [my_begin, my_end) under ZeRO/FSDP (the reduce-scatter, bucketed and overlapped with backward, is
// parallel/gradient_sync.cpp's), or into the whole buffer under plain DP.
//   dp            every replica updates everything, the same way: nothing to send
//   zero1, zero2  update this rank's shard only, then all-gather the updated weights (every rank computes
//                 with all of them)
//   zero3, hybrid update this rank's shard only: the weights stay sharded (gathered per unit when used)
#pragma once
#include <cstdint>

#include "comm/communicator.h"
#include "optim/model_states.h"
#include "optim/strategy.h"

namespace shardlab {

// group: the ranks the states are sharded over (states.shards() is its geometry).
template <class T>
void sharded_optimizer_step(ModelStates<T>& states, Strategy strategy, Communicator& group, int64_t step, double lr,
                            double grad_scale);

}  // namespace shardlab
