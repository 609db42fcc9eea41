// The whole GPT as one model chunk (model_chunk.h) with one micro-batch at a time: the convenience form
// for evaluation, sampling, benchmarks and tests. forward() runs a micro-batch (dropping the records of
// the previous one if it was not backwarded), backward() the last forward's backward. Training loops
// that keep several micro-batches in flight use ModelChunk directly.
#pragma once
#include <cstdint>

#include "model/model_chunk.h"

namespace shardlab {

template <class T>
class GPT {
 public:
  GPT(const GPTConfig& cfg, const ParamLayout& layout, int micro_batch, MemoryLedger& ledger,
      ActivationPolicy policy = {})
      : chunk_(cfg, layout, ChunkSpec::whole(cfg), micro_batch, policy, ledger) {}

  // inputs, targets (batch, T), batch ≤ micro_batch (default: all of it). Returns Σ over the
  // batch·T tokens of -log p(target) (double) and keeps activations for backward. Dropout is
  // active only when train is true.
  double forward(UnitAccess<T>& access, const int32_t* inputs, const int32_t* targets, bool train,
                 const DropoutContext& drop = {}, int batch = -1) {
    chunk_.release(0);
    MicroBatch mb{0, batch < 0 || batch > chunk_.capacity() ? chunk_.capacity() : batch, inputs, targets, drop, train};
    return chunk_.forward(mb, access);
  }
  // Accumulates d(loss_scale · Σ token losses)/d params into the grads. loss_scale = 1/(global batch tokens).
  void backward(UnitAccess<T>& access, T loss_scale) { chunk_.backward(0, access, loss_scale); }

  // The same on flat buffers.
  double forward(const T* params, const int32_t* inputs, const int32_t* targets, bool train,
                 const DropoutContext& drop = {}, int batch = -1) {
    FlatAccess<T> flat(chunk_.layout(), params, nullptr);
    return forward(flat, inputs, targets, train, drop, batch);
  }
  void backward(T* grads, const T* params, T loss_scale) {
    FlatAccess<T> flat(chunk_.layout(), params, grads);
    backward(flat, loss_scale);
  }

  // Probabilities (B, T, V) left by the last forward (for sampling).
  const T* probs() const { return chunk_.probs(0); }
  int micro_batch() const { return chunk_.capacity(); }
  const ParamLayout& layout() const { return chunk_.layout(); }
  ModelChunk<T>& chunk() { return chunk_; }

 private:
  ModelChunk<T> chunk_;
};

}  // namespace shardlab
