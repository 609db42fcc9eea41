// One transformer block as a forward/backward pair of free functions:
//   x → LN1 → [enter] QKV → attention → W^O [leave] + b → dropout → + x = resid_mid
//     → LN2 → [enter] fc → GELU → fc-proj [leave] + b → dropout → + resid_mid = out
// over a weights view and a grads view (pointers into the flat layout, one unit), the block's activation
// record for one micro-batch (activation_record.h), its local dimensions and a workspace.
//
// Local dimensions with global offsets: the block runs on local sizes — its heads, its share of the MLP
// width, its rows of the sequence — and knows the global index of each slice's first element, so every
// dropout mask is the whole model's mask for that slice. With tensor parallelism a rank holds heads
// [first_head, first_head + NH) and MLP columns of width F; with sequence parallelism the residual
// stream holds rows [first_row, first_row + T_local) of the sequence. With context parallelism the sequence
// a rank holds is its T_ctx tokens of each sample, at the global positions `pos` says (token_positions.h),
// and the attention core reaches the other ranks' tokens through the hooks' attention seam (ring attention).
//
// Communication seams: entering and leaving each tensor-parallel region the block calls a RegionHooks
// method; the base class is the identity (one process, data parallel). Tensor parallelism makes them
// Megatron's f and g (identity/all-reduce), sequence parallelism an all-gather/reduce-scatter along the
// sequence. The row-parallel projections' biases are added after leaving (once, not once per rank).
//
// Memory order: activations are (B, T, C), samples outermost, as everywhere in the model. A sequence
// slice of a micro-batch is then B separate pieces (one per sample) rather than one contiguous block, so
// sequence/context parallelism packs them into the collective's buffer and unpacks after (a copy per
// collective, cheap next to the GEMMs) instead of reordering the whole model to Megatron's (T, B, C):
// keeping (B, T, C) keeps every sum over tokens in the order of the single-process model, which is what
// lets the layouts reproduce its loss curve bit for bit.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "core/exact_sum.h"
#include "model/activation_record.h"
#include "model/dropout.h"
#include "model/moe.h"
#include "model/param_layout.h"
#include "model/row_split.h"
#include "model/token_positions.h"

namespace shardlab {

// Where dropout randomness comes from for one micro-batch (see dropout.h).
struct DropoutContext {
  uint64_t seed = 0;
  uint64_t step = 0;          // optimizer step
  uint64_t first_sample = 0;  // global index of the micro-batch's first sample within the step
};

struct BlockDims {
  int B = 0;            // samples in the micro-batch
  int T = 0;            // sequence length (global)
  int C = 0;            // hidden size (the residual stream is never split by heads)
  int NH = 0, HD = 0;   // heads on this rank, head size
  int F = 0;            // MLP width on this rank (4C / t)
  int T_ctx = 0;        // tokens per sample on this rank (T, or T / c with context parallel)
  int T_local = 0;      // residual rows per sample (T_ctx, or T_ctx / t with sequence parallel)
  int heads_total = 0;  // heads of the whole model
  int first_head = 0;   // global index of this rank's first head
  int first_row = 0;    // which of the T_ctx tokens is this rank's first residual row
  TokenPositions pos;   // the global position of each of the T_ctx tokens (token_positions.h)
  int layer = 0;        // global layer index
  // The first of the micro-batch's samples these dimensions hold (inside a region under --exact --cp: whole_samples.h).
  int first_sample = 0;
  // A block with experts in place of the MLP (moe.h): E experts (0: the dense MLP), k per token, each of width
  // expert_ffn, at most `capacity` slots per expert per sample (0: all); this rank's [first_expert, + local).
  int experts = 0, top_k = 0, expert_ffn = 0, capacity = 0, first_expert = 0, local_experts = 0;
  // The products' rows as one GEMM, or (the exact mode) one per sample with each sample's parameter gradients in
  // its own copy of the unit's gradients (row_split.h).
  RowSplit split;
  MoeShape moe() const {
    return MoeShape{MoeDims{static_cast<int>(rows()), C, experts, top_k, capacity, T_local}, expert_ffn, first_expert,
                    local_experts, split};
  }
  int CL() const { return NH * HD; }                        // attention width on this rank
  int mlp_chunk() const { return 4 * C / heads_total; }     // the exact mode's MLP chunk (linear_exact.h)
  size_t rows() const { return size_t(B) * T_local; }       // residual rows
  size_t region_rows() const { return size_t(B) * T_ctx; }  // rows inside the tensor-parallel regions
};

// A block's tensors inside its unit's range of the flat layout (P = const T* for weights, T* for grads).
template <class P>
struct BlockTensors {
  P ln1_w, ln1_b, qkv_w, qkv_b, proj_w, proj_b, ln2_w, ln2_b, fc_w, fc_b, fcproj_w, fcproj_b;
  MoeWeights<P> moe;  // a block with experts: the router and this rank's experts (the dense MLP's are null)
  // unit: the unit's pointer; begin: the unit's first flat offset.
  static BlockTensors at(P unit, size_t begin, const BlockOffsets& o) {
    auto p = [&](size_t offset) { return unit + (offset - begin); };
    auto dense = [&](size_t offset) { return o.moe ? P(nullptr) : p(offset); };
    auto expert = [&](size_t offset) { return o.moe ? p(offset) : P(nullptr); };
    return {p(o.ln1_w),
            p(o.ln1_b),
            p(o.qkv_w),
            p(o.qkv_b),
            p(o.proj_w),
            p(o.proj_b),
            p(o.ln2_w),
            p(o.ln2_b),
            dense(o.fc_w),
            dense(o.fc_b),
            dense(o.fcproj_w),
            dense(o.fcproj_b),
            {expert(o.router_w), expert(o.experts_fc_w), expert(o.experts_fc_b), expert(o.experts_proj_w),
             expert(o.experts_proj_b)}};
  }
};

// The seams of a block: its tensor-parallel regions (see the top), its attention core, and where its
// experts' rows go (expert_exchange.h). The base class is the identity.
template <class T>
class RegionHooks : public ExpertExchange<T> {
 public:
  virtual ~RegionHooks() = default;
  // Forward, entering: the region's input (B·T rows) from the residual rows (B·T_local). f: identity.
  virtual const T* enter(const T* x, T* full, const BlockDims& d) { return x; }
  // Forward, leaving: every rank's partial sums (B·T rows) into the residual rows y. g: all-reduce.
  // May work in place (y == partial).
  virtual void leave(T* partial, T* y, const BlockDims& d) {}
  // Backward of leave: the output gradient (B·T_local rows) as the region sees it (B·T rows).
  virtual const T* leave_backward(const T* dy, T* full, const BlockDims& d) { return dy; }
  // Backward of enter: the region input's gradient (B·T rows, every rank's part) into the residual rows
  // (in place; returns where the result is). f's backward: all-reduce.
  virtual T* enter_backward(T* d_full, const BlockDims& d) { return d_full; }
  // The region's input again in backward (for the weight gradients), from the saved residual rows.
  virtual const T* region_input(const T* x, T* full, const BlockDims& d) { return x; }
  // The exact mode (linear_exact.h): leave and enter_backward with this rank's order-free sums (N rows) instead of
  // its partial sums — merged over the region's ranks, rounded once into y (R rows) / d_full (returned). The
  // identity rounds.
  virtual void leave_exact(ExactSum* partial, T* y, const BlockDims& d) {
    exact_round(y, partial, d.rows() * size_t(d.C));
  }
  virtual T* enter_backward_exact(ExactSum* d_partial, T* d_full, const BlockDims& d) {
    exact_round(d_full, d_partial, d.region_rows() * size_t(d.C));
    return d_full;
  }
  // The attention core when the keys are not all on this rank (context parallelism: ring attention, with the
  // flash kernel's out/lse contract, flash_attention.h). false: this rank holds the whole sequence, and the
  // block runs its own kernel.
  virtual bool attention_forward(T* out, T* lse, const T* qkv, const BlockDims& d, const Dropout& drop, T* scratch) {
    return false;
  }
  virtual bool attention_backward(T* d_qkv, const T* d_out, const T* out, const T* qkv, const T* lse,
                                  const BlockDims& d, const Dropout& drop, T* scratch) {
    return false;
  }
};

// Compute buffers of one block's forward and backward, shared by every block of a chunk and every
// micro-batch (booked as workspace). Sized for the chunk's largest micro-batch; rows R = B·T_local,
// region rows N = B·T.
template <class T>
struct BlockScratch {
  T *d_res, *d_tmp;    // (R, C): the residual stream's gradient; a masked copy of it
  T* d_ln;             // (N, C)
  T* d_qkv;            // (N, 3·CL)
  T *d_fc, *d_gelu;    // (N, F)
  T* attention;        // naive: 2·T·T; flash: flash_scratch_elements()
  T* probs;            // (B, NH, T, T) when the record keeps no probabilities (selective), or keeps them
                       // as bf16 (the compute slot they are rounded from)
  T* discard;          // (R, C): where a recomputed forward puts the output nobody needs
  T *full_a, *full_b;  // (N, C): a region's gathered input / output gradient (sequence parallel)
  // bf16 records: compute slots, one per half-precision tensor (null otherwise)
  T *x, *ln1, *qkv, *atty, *resid_mid, *ln2, *fc, *gelu;
};

// The rows one forward of a chunk allocated its MoE records for (claim C25: routing depends on the input, so
// they vary): per MoE block, in block order, n kept slots (block.moe.slot_out's rows), m rows this rank's experts
// computed (block.moe.expert_in's, pre's and act's) and, of those, the rows of its own slots (what stays home in
// the all-to-alls). A recompute's forward routes the same and is not listed.
struct MoeForwardRows {
  bool train = true;  // false: an evaluation forward
  int samples = 0;
  std::vector<std::array<int, 3>> blocks;  // {n, m, own}
};

// What a step's MoE blocks routed (forward only, not a recompute): the router losses' sums and the slots per
// expert, per MoE block of the chunk (claim C25's load).
struct MoeStats {
  double aux = 0;                         // Σ over samples and MoE blocks of the load-balancing loss
  double z = 0;                           // Σ over tokens and MoE blocks of lse²
  ExactSum aux_terms, z_terms;            // the same two sums, order-free (the exact mode reports these)
  double dropped = 0;                     // slots capacity dropped
  std::vector<std::vector<double>> load;  // [layer][expert]: slots routed (before capacity); empty if dense
  void add(const MoeStats& o) {           // another chunk's blocks (or the same blocks' later forwards)
    aux += o.aux, z += o.z, dropped += o.dropped;
    exact_merge(aux_terms, o.aux_terms);
    exact_merge(z_terms, o.z_terms);
    if (load.size() < o.load.size()) load.resize(o.load.size());
    for (size_t l = 0; l < o.load.size(); ++l) {
      if (load[l].size() < o.load[l].size()) load[l].resize(o.load[l].size(), 0.0);
      for (size_t e = 0; e < o.load[l].size(); ++e) load[l][e] += o.load[l][e];
    }
  }
};

// Run-wide facts a block needs.
struct BlockRun {
  ActivationPolicy policy;
  double dropout = 0.0;  // probability when training (0 in evaluation)
  DropoutContext drop;
  double aux_weight = 0, z_weight = 0;  // backward: the router losses' weights (per sample's, per token's)
  MoeStats* moe_stats = nullptr;        // forward: where routing statistics go (null: nowhere)
};

// Allocates every tensor the record keeps under `policy` except x (already there, the previous block's
// output). With full recompute the forward still allocates them all; block_forward drops them after.
template <class T>
void allocate_block_record(BlockRecord<T>& rec, const BlockDims& d, const ActivationPolicy& policy,
                           MemoryLedger& ledger);

// Forward of one block for one micro-batch: reads rec.x, writes the output (R, C) to out (the next
// record's input, or the chunk's output), keeps what the policy says in rec.
template <class T>
void block_forward(BlockRecord<T>& rec, T* out, const BlockTensors<const T*>& w, const BlockDims& d,
                   const BlockRun& run, BlockScratch<T>& ws, RegionHooks<T>& hooks, MemoryLedger& ledger);

// Backward: ws.d_res holds d(out) on entry and d(x) on return; gradients accumulate into g. Full
// recompute re-runs the forward first (re-allocating the record); the record is released at the end.
// sums (the exact mode, else null): the unit's order-free gradient sums, where the tensors whole on every tp rank
// (LayerNorms, the row-parallel biases) add each row's contribution (model/linear_exact.h).
template <class T>
void block_backward(BlockTensors<T*>& g, const BlockTensors<const T*>& w, BlockRecord<T>& rec, const BlockDims& d,
                    const BlockRun& run, BlockScratch<T>& ws, RegionHooks<T>& hooks, MemoryLedger& ledger,
                    const BlockTensors<ExactSum*>* sums = nullptr);

}  // namespace shardlab
