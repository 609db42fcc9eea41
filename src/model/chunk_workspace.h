// The scratch a model chunk's blocks compute in (BlockScratch: gradients of the residual stream and of
// each sublayer, the attention kernel's tiles, recompute's and sequence parallelism's spare tensors),
// booked in the memory ledger as workspace and sized for one micro-batch of `capacity` samples.
// Nothing in it outlives one forward or backward call (a chunk copies its outputs out), so chunks that
// never run at the same time — the v chunks of an interleaved pipeline stage — share one workspace.
#pragma once
#include <vector>

#include "core/ledger.h"
#include "model/activation_policy.h"
#include "model/block.h"

namespace shardlab {

template <class T>
class ChunkWorkspace {
 public:
  // d: a block's dimensions for the largest micro-batch (d.B = capacity).
  ChunkWorkspace(const BlockDims& d, const ActivationPolicy& policy, MemoryLedger& ledger);
  const BlockScratch<T>& scratch() const { return scratch_; }
  // Whether this workspace fits blocks of dimensions d under policy (what a chunk sharing it must have).
  bool fits(const BlockDims& d, const ActivationPolicy& policy) const;

 private:
  BlockDims dims_;
  ActivationPolicy policy_;
  std::vector<Buffer<T>> buffers_;
  BlockScratch<T> scratch_{};
};

}  // namespace shardlab
