// Context parallelism (claim C24): every sample's tokens are split over the cp ranks (zigzag or contiguous,
// model/token_positions.h); everything per token — LayerNorm, the MLP, dropout, the residual, the head — runs
// on a rank's own tokens unchanged, and only attention, which needs every earlier token, reaches the others:
// ring attention. Each rank keeps its queries; the K/V blocks travel around the cp ring:
//   forward   c steps; at step s this rank holds the block of rank r − s. Before computing on it, it posts the
//             send of that block to rank r + 1 and the receive of the next from rank r − 1 (double buffering:
//             the transfer overlaps the compute), then folds the block's partial softmax into its running one
//             (model/ring_attention.h, model/ring_merge.h). c − 1 hops of 2·(B·s/c)·(h/t) values.
//   backward  K/V go around once more; each block's dK/dV travel with it, every rank adding its share, and one
//             last hop brings them home: c − 1 hops of K/V and c hops of dK/dV.
// Every message is booked on the cp axis under purpose "ring_attention". Gradients of every parameter are then
// summed over dp × cp like data parallelism's (the grid's gradient group, comm/process_grid.h).
// Wraps the chunk's other hooks (tensor parallelism's, or the identity) and passes every other seam to them, so
// cp composes with tp: heads over tp, tokens over cp.
#pragma once
#include <vector>

#include "comm/communicator.h"
#include "comm/trace.h"
#include "core/ledger.h"
#include "model/model_chunk.h"
#include "model/ring_attention.h"

namespace shardlab {

template <class T>
class ContextParallelAttention : public WrappedHooks<T> {
 public:
  // inner: the other seams (null: the identity). capacity: the largest micro-batch; heads: this rank's heads.
  // trace (may be null): each ring step's compute and each wait for a transfer, as spans of lane 0.
  ContextParallelAttention(Communicator& cp, ChunkHooks<T>* inner, const ModelSlice& slice, int seq, int capacity,
                           int heads, int head_dim, MemoryLedger& ledger, Trace* trace = nullptr);

  bool attention_forward(T* out, T* lse, const T* qkv, const BlockDims& d, const Dropout& drop, T* scratch) override;
  bool attention_backward(T* d_qkv, const T* d_out, const T* out, const T* qkv, const T* lse, const BlockDims& d,
                          const Dropout& drop, T* scratch) override;

  // Every other seam: the wrapped hooks' (WrappedHooks).

 private:
  RingDims dims_of(const BlockDims& d) const { return RingDims{d.B, d.NH, d.HD, d.T_ctx}; }
  const TokenPositions& positions_of(int member) const { return positions_[member]; }

  Communicator& cp_;
  Trace no_trace_;
  Trace* trace_;
  std::vector<TokenPositions> positions_;  // every cp rank's tokens
  Buffer<T> kv_[2];                        // the block computed on and the one arriving (B, Tc, NH, 2, HD)
  Buffer<T> dkv_mine_, dkv_in_, dkv_out_;  // backward: this rank's share, the arriving sum, the sum sent on
  Buffer<T> running_sum_;                  // forward: l (B, NH, Tc); m lives in the lse buffer until the end
  Buffer<T> scratch_;                      // ring_scratch_elements
};

}  // namespace shardlab
