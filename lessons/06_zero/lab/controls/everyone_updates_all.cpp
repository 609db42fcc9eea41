// Control for lab 06: every strategy updates the whole buffer, as plain DP does: the shards' optimizer states are not
// there
// loses: zero1 zero2 zero3 bf16 bytes
// says: first at step|crashed|error
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
  states.optimizer_step(step, lr, grad_scale, 0, shards.padded());
  if (strategy == Strategy::zero1 || strategy == Strategy::zero2) {  // every rank needs every updated weight
    FlatStore<T>& p = states.params();
    const std::vector<size_t> counts = shards.counts(0, shards.padded());
    if (p.is_bf16())
      group.all_gather(p.h(0), counts);
    else
      group.all_gather(p.t(0), counts);
    states.sync_compute(0, shards.padded());
  }
}

template void sharded_optimizer_step<float>(ModelStates<float>&, Strategy, Communicator&, int64_t, double, double);
template void sharded_optimizer_step<double>(ModelStates<double>&, Strategy, Communicator&, int64_t, double, double);

}  // namespace shardlab
