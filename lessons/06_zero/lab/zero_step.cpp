// Lab 06 — the ZeRO optimizer step: your zero_step.cpp (the task: LAB_README.md; the contract:
// src/parallel/zero_step.h). When this runs, the gradients are already reduced: summed over the group into
// this rank's shard [my_begin, my_end) under ZeRO/FSDP, into the whole buffer under plain DP.
// Grade it: make lab LAB=06 SOLUTION=<this file>
#include "parallel/zero_step.h"

#include <vector>

#include "core/not_written.h"

namespace shardlab {

// The tools (src/optim/model_states.h, src/optim/shard_layout.h, src/comm/communicator.h):
//   states.optimizer_step(step, lr, grad_scale, a, b)  one AdamW step on the flat range [a, b)
//   states.shards(): padded() (the whole buffer), my_begin(), my_end() (this rank's shard), counts(a, b)
//   states.params(): the stored weights — .t(0) (T) or, when .is_bf16(), .h(0) (bf16)
//   group.all_gather(buffer, counts)  every member's chunk to every member
//   states.sync_compute(a, b)  refresh the f32 copy the model computes with from the stored weights
template <class T>
void sharded_optimizer_step(ModelStates<T>& states, Strategy strategy, Communicator& group, int64_t step, double lr,
                            double grad_scale) {
  not_written_yet("sharded_optimizer_step (dp, zero1, zero2, zero3, hybrid)");
}

template void sharded_optimizer_step<float>(ModelStates<float>&, Strategy, Communicator&, int64_t, double, double);
template void sharded_optimizer_step<double>(ModelStates<double>&, Strategy, Communicator&, int64_t, double, double);

}  // namespace shardlab
