// Control for lab 06: bf16: the gathered weights are not copied into the f32 copy the model computes with
// loses: bf16
// says: first at step 2
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
    if (p.is_bf16())
      group.all_gather(p.h(0), counts);
    else
      group.all_gather(p.t(0), counts);
  }
}

template void sharded_optimizer_step<float>(ModelStates<float>&, Strategy, Communicator&, int64_t, double, double);
template void sharded_optimizer_step<double>(ModelStates<double>&, Strategy, Communicator&, int64_t, double, double);

}  // namespace shardlab
