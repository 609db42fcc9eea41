// Context parallelism in the exact mode (--exact --cp c): the same token split as ring attention's
// (context_parallel.h) between the tensor-parallel regions — the embedding, LayerNorms, dropout on activations, the
// residual stream and the final LayerNorm run on each rank's own T/c tokens of every sample — while inside each
// region (QKV → attention → W^O, fc → GELU → fc-proj, the LM head and its loss) the micro-batch's samples are dealt
// out whole: rank r runs samples [first(r), first(r + 1)) (model/whole_samples.h), exactly as the single process
// runs them, one sample's T rows per product in position order. So every product, every attention score and every
// weight gradient is the single process's to the bit, whatever c and whichever token split (zigzag or contiguous).
//
// Why not ring attention, or the all-to-all over heads (DeepSpeed-Ulysses): either keeps each product on the rank's
// T/c rows of a sample, and a BLAS kernel may round a row differently beside another number of rows (OpenBLAS's
// SkylakeX kernels and its Haswell sgemm do), while a weight gradient sums over all of a sample's T rows in one
// product. Making those agree would mean running every product of every exact layout, the single process included,
// in fixed row blocks with order-free sums between them; here only the cp runs pay, in messages.
//
// The seams: entering a region (enter, region_input, leave_backward, head_input) gathers this rank's whole samples'
// rows from every cp rank (an all-to-all over cp: each rank sends its rows of the samples another rank runs), in
// position order; leaving it (leave_exact, enter_backward_exact, head_input_backward_exact) rounds the region's
// order-free sums on the rank that ran the sample — after the wrapped hooks merged them over tp — and sends every
// row home. Every message is a (rows, C) slice of activations or their gradients, booked on the cp axis under
// purpose "exact_rows". Ring attention is not used: attention_forward/backward stay with the wrapped hooks.
// Leaves out: sequence parallelism with --exact --cp (train_config.cpp refuses it).
#pragma once
#include <vector>

#include "comm/communicator.h"
#include "core/ledger.h"
#include "model/model_chunk.h"
#include "model/token_positions.h"

namespace shardlab {

template <class T>
class ExactContextParallel : public WrappedHooks<T> {
 public:
  // inner: the other seams (null: the identity); capacity: the largest micro-batch (a multiple of c); seq: T.
  ExactContextParallel(Communicator& cp, ChunkHooks<T>* inner, const ModelSlice& slice, int seq, int capacity,
                       int hidden, MemoryLedger& ledger);

  const T* enter(const T* x, T* full, const BlockDims& d) override;
  const T* region_input(const T* x, T* full, const BlockDims& d) override;
  const T* leave_backward(const T* dy, T* full, const BlockDims& d) override;
  const T* head_input(const T* x, T* full, const BlockDims& d) override;
  void leave_exact(ExactSum* partial, T* y, const BlockDims& d) override;
  T* enter_backward_exact(ExactSum* d_partial, T* d_full, const BlockDims& d) override;
  void head_input_backward_exact(ExactSum* d_partial, T* d_full, const BlockDims& d) override;

 private:
  // x (B, T/c, C): this rank's tokens of every sample → out (B_r, T, C): its whole samples, in position order.
  const T* gather(const T* x, int B, T* out);
  // whole (B_r, T, C) → y (B, T/c, C): every row back to the rank that holds its token. B: the last gather's.
  void scatter(const T* whole, T* y);

  Communicator& cp_;
  int T_, Tc_, C_;
  int batch_ = 0;                          // the micro-batch of the last gather (a region is left after entering it)
  std::vector<TokenPositions> positions_;  // every cp rank's tokens
  Buffer<T> inputs_, grads_, rounded_;     // gathered region inputs, gathered output gradients, rounded sums
  Buffer<T> exchange_;                     // the all-to-all's packed side
};

}  // namespace shardlab
