// Control for lab 06: under ZeRO-2, rank 0 skips the all-gather that every other rank enters ("rank 0 has the
// result already"): they wait for it forever, and the watchdog ends the job naming where each rank waits
// loses: zero2
// says: a deadlock: each waits for a message or collective another rank is not in
#include "parallel/zero_step.h"

#include <vector>

namespace shardlab {

template <class T>
void sharded_optimizer_step(ModelStates<T>& states, Strategy strategy, Communicator& group, int64_t step, double lr,
                            double grad_scale) {
  const ShardLayout& shards = states.shards();
  if (strategy == Strategy::dp) {  // every replica applies the same update to everything
    states.optimizer_step(step, lr, grad_scale, 0, shards.padded());
    return;
  }
  states.optimizer_step(step, lr, grad_scale, shards.my_begin(), shards.my_end());
  if (strategy == Strategy::zero1 || strategy == Strategy::zero2) {  // every rank needs every updated weight
    FlatStore<T>& p = states.params();
    const std::vector<size_t> counts = shards.counts(0, shards.padded());
    if (strategy != Strategy::zero2 || group.rank() != 0) {  // but an all-gather needs every member
      if (p.is_bf16())
        group.all_gather(p.h(0), counts);
      else
        group.all_gather(p.t(0), counts);
    }
    states.sync_compute(0, shards.padded());
  }
}

template void sharded_optimizer_step<float>(ModelStates<float>&, Strategy, Communicator&, int64_t, double, double);
template void sharded_optimizer_step<double>(ModelStates<double>&, Strategy, Communicator&, int64_t, double, double);

}  // namespace shardlab
