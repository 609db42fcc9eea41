// A model chunk: a contiguous range of the model's units — the embedding on the first chunk, blocks
// [first_block, end_block), the final LayerNorm + LM head + loss on the last — with
//   forward(micro-batch, x_in) → x_out   and   backward(micro-batch, d_out) → d_in.
// The single process is one chunk holding everything; a pipeline stage holds one (or, interleaved, v).
// Several micro-batches may be in flight at once, each with its own activation records (keyed by the
// micro-batch's id), allocated as its forward reaches each block and released after its backward — so a
// schedule that stashes m micro-batches shows m records in the memory ledger.
// Weights and gradients belong to the caller and are reached unit by unit through UnitAccess; the
// chunk owns only records and its workspace (chunk_workspace.h), shared by all micro-batches — and by
// the other chunks of an interleaved pipeline stage.
// Leaves out: communication between chunks (the pipeline executor moves x_out/d_in between stages).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "core/exact_sum.h"
#include "core/ledger.h"
#include "model/activation_record.h"
#include "model/block.h"
#include "model/chunk_spec.h"
#include "model/chunk_workspace.h"
#include "model/config.h"
#include "model/head.h"
#include "model/param_layout.h"
#include "model/unit_access.h"

namespace shardlab {

// One micro-batch as the chunk sees it. Tokens are copied at forward, so the caller's buffers may be
// reused at once.
struct MicroBatch {
  int id = 0;                        // distinct for micro-batches in flight at the same time
  int B = 0;                         // samples
  const int32_t* inputs = nullptr;   // (B, T), needed by the first chunk
  const int32_t* targets = nullptr;  // (B, T), needed by the last chunk
  DropoutContext drop;
  bool train = true;  // dropout on; false for evaluation
};

// What a layout gives a chunk to communicate through: its blocks' region seams and its head's vocabulary
// seams (tensor parallelism: parallel/tensor_parallel.h). The base class is the identity.
template <class T>
class ChunkHooks : public RegionHooks<T>, public HeadHooks<T> {};

// A layout that adds one kind of communication to another's (context parallelism's ring attention, expert
// parallelism's all-to-alls) wraps it: every seam goes to the wrapped hooks (null: the identity) unless the
// wrapper overrides it.
template <class T>
class WrappedHooks : public ChunkHooks<T> {
 public:
  explicit WrappedHooks(ChunkHooks<T>* inner) : inner_(inner ? inner : &identity_) {}
  const T* enter(const T* x, T* full, const BlockDims& d) override { return inner_->enter(x, full, d); }
  void leave(T* partial, T* y, const BlockDims& d) override { inner_->leave(partial, y, d); }
  const T* leave_backward(const T* dy, T* full, const BlockDims& d) override {
    return inner_->leave_backward(dy, full, d);
  }
  T* enter_backward(T* d_full, const BlockDims& d) override { return inner_->enter_backward(d_full, d); }
  const T* region_input(const T* x, T* full, const BlockDims& d) override { return inner_->region_input(x, full, d); }
  void leave_exact(ExactSum* partial, T* y, const BlockDims& d) override { inner_->leave_exact(partial, y, d); }
  T* enter_backward_exact(ExactSum* d_partial, T* d_full, const BlockDims& d) override {
    return inner_->enter_backward_exact(d_partial, d_full, d);
  }
  bool attention_forward(T* out, T* lse, const T* qkv, const BlockDims& d, const Dropout& drop, T* scratch) override {
    return inner_->attention_forward(out, lse, qkv, d, drop, scratch);
  }
  bool attention_backward(T* d_qkv, const T* d_out, const T* out, const T* qkv, const T* lse, const BlockDims& d,
                          const Dropout& drop, T* scratch) override {
    return inner_->attention_backward(d_qkv, d_out, out, qkv, lse, d, drop, scratch);
  }
  ExpertRows counts(const int* per_expert, int E) override { return inner_->counts(per_expert, E); }
  void to_experts(const T* slot_rows, int n, T* expert_rows, const ExpertRows& rows, int C) override {
    inner_->to_experts(slot_rows, n, expert_rows, rows, C);
  }
  void to_slots(const T* expert_rows, const ExpertRows& rows, T* slot_rows, int n, int C) override {
    inner_->to_slots(expert_rows, rows, slot_rows, n, C);
  }
  const T* head_input(const T* x, T* full, const BlockDims& d) override { return inner_->head_input(x, full, d); }
  void head_input_backward(T* d_full, const BlockDims& d) override { inner_->head_input_backward(d_full, d); }
  void vocab_max(T* x, size_t n) override { inner_->vocab_max(x, n); }
  void vocab_sum(T* x, size_t n) override { inner_->vocab_sum(x, n); }
  void head_input_backward_exact(ExactSum* d_partial, T* d_full, const BlockDims& d) override {
    inner_->head_input_backward_exact(d_partial, d_full, d);
  }
  void vocab_sum_exact(ExactSum* x, size_t n) override { inner_->vocab_sum_exact(x, n); }

 private:
  ChunkHooks<T> identity_;
  ChunkHooks<T>* inner_;
};

template <class T>
class ModelChunk {
 public:
  // capacity: the largest micro-batch; hooks: the tensor-parallel seams (null: identity); workspace: the
  // scratch of another chunk that never runs at the same time as this one (null: a workspace of its own).
  ModelChunk(const GPTConfig& cfg, const ParamLayout& layout, ChunkSpec spec, int capacity, ActivationPolicy policy,
             MemoryLedger& ledger, ChunkHooks<T>* hooks = nullptr, ModelSlice slice = {},
             std::shared_ptr<ChunkWorkspace<T>> workspace = nullptr);
  ~ModelChunk();

  // Forward of one micro-batch. No embedding: x_in (B, T_local, C) is the previous chunk's output. No
  // head: the output goes to x_out (B, T_local, C). With the head: returns Σ of this rank's token losses.
  double forward(const MicroBatch& mb, UnitAccess<T>& weights, const T* x_in = nullptr, T* x_out = nullptr);
  // Backward of a micro-batch whose forward ran: with the head, from the loss (scaled by loss_scale, the
  // one normalisation: 1 / tokens of the global batch); else from d_out, the gradient of x_out. Without
  // the embedding, the gradient of x_in goes to d_in. Accumulates into the gradients; frees the records.
  void backward(int mb_id, UnitAccess<T>& weights, T loss_scale, const T* d_out = nullptr, T* d_in = nullptr);
  // Head: the (B·T_local, V) probabilities of a forward that has not been backwarded (for sampling); under
  // --tp t this rank's (B·T, V/t) slice of them.
  const T* probs(int mb_id) const;
  // Drops a micro-batch's records without a backward (after an evaluation forward).
  void release(int mb_id);

  int capacity() const { return capacity_; }
  int in_flight() const { return static_cast<int>(records_.size()); }
  const ChunkSpec& spec() const { return spec_; }
  const ParamLayout& layout() const { return layout_; }
  const std::shared_ptr<ChunkWorkspace<T>>& workspace() const { return workspace_; }
  BlockDims dims(int B, int layer) const;  // this rank's dimensions of a block for a micro-batch of B
  // What the MoE blocks routed in the training forwards since the last call (block.h), and starts afresh.
  MoeStats take_moe_stats() { return std::exchange(moe_stats_, MoeStats{}); }
  // The exact mode: every position's −log p of the forwards since the last take, as one order-free sum.
  ExactSum take_loss_terms() { return std::exchange(loss_terms_, ExactSum{}); }
  // Every forward's MoE rows since the chunk was built, in order (empty without MoE blocks).
  const std::vector<MoeForwardRows>& moe_rows() const { return moe_rows_; }

 private:
  struct Records;
  BlockRun run_of(const Records& r) const;
  GPTConfig cfg_;
  const ParamLayout& layout_;
  ChunkSpec spec_;
  int capacity_;
  ActivationPolicy policy_;
  MemoryLedger& ledger_;
  ChunkHooks<T> identity_;
  ChunkHooks<T>* hooks_;
  ModelSlice slice_;
  std::shared_ptr<ChunkWorkspace<T>> workspace_;
  BlockScratch<T> ws_{};  // workspace_'s pointers
  std::map<int, std::unique_ptr<Records>> records_;
  MoeStats moe_stats_;
  ExactSum loss_terms_;
  std::vector<MoeForwardRows> moe_rows_;
};

}  // namespace shardlab
