// Parameter layout: every tensor of the GPT as a named view {offset, shape} into ONE flat buffer,
// in a fixed global order (embeddings, block 0 … block L-1, final LN, LM head). Params, grads and
// optimizer states all use this layout, so data parallel is one all-reduce of one buffer and
// ZeRO/FSDP shard it by {offset, size}. Weights are (out, in) row-major: y = x · Wᵀ + b.
// The fused QKV rows are ordered per head: [q_h, k_h, v_h] for h = 0…NH-1, so a head is a
// contiguous slice (what tensor parallelism splits).
//
// With tensor parallelism (a ModelSlice with tp > 1) the layout is one rank's: the same tensors under
// their global names, with local shapes and a slice descriptor saying where the local part sits in the
// whole tensor (Megatron's partitions, claim C17):
//   attn.qkv  rows of this rank's heads        (column-parallel: Y_i = X·A_iᵀ, no communication)
//   attn.proj columns of this rank's heads     (row-parallel: Σ_i Y_i·B_iᵀ, summed by an all-reduce)
//   mlp.fc    rows [r·4C/t, (r+1)·4C/t)        (column-parallel)
//   mlp.proj  the same columns                 (row-parallel)
//   lm_head   rows [r·V/t, (r+1)·V/t)          (vocabulary-parallel: this rank's logits, parallel cross-entropy)
// Everything else (embeddings, LayerNorms, the row-parallel biases) is replicated whole.
// A pipeline stage's layout holds only its units' tensors (the same names, offsets packed).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"

namespace shardlab {

enum class Init { normal, normal_residual, zeros, ones };

// Where a local tensor sits in the whole one: all of it (dim -1), rows [start, start + shape[0]) (dim 0),
// or columns [start, start + shape[1]) of every row (dim 1).
struct TensorSlice {
  int dim = -1;
  int64_t start = 0;
};

struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;         // this rank's part
  std::vector<int64_t> global_shape;  // the whole tensor (= shape unless sliced)
  TensorSlice slice;
  size_t offset = 0;  // elements from the start of the flat buffer
  size_t numel = 0;
  Init init = Init::zeros;
  bool decay = false;   // weight decay applies to matrices (and embeddings), not to biases or LN
  bool expert = false;  // an expert's tensor (a MoE block's experts): with expert parallelism, on one ep rank
  bool replicated() const { return slice.dim < 0; }
};

// The local tensor as contiguous runs of the whole one: f(local element, whole-tensor element, count)
// for each run, in local order (one run unless the slice takes columns).
template <class F>
void for_each_run(const TensorSpec& t, F&& f) {
  if (t.slice.dim < 0) return f(size_t(0), size_t(0), t.numel);
  const size_t cols = static_cast<size_t>(t.shape.size() > 1 ? t.shape[1] : 1);
  if (t.slice.dim == 0) return f(size_t(0), static_cast<size_t>(t.slice.start) * (t.numel / t.shape[0]), t.numel);
  const size_t rows = static_cast<size_t>(t.shape[0]), global_cols = static_cast<size_t>(t.global_shape[1]);
  for (size_t r = 0; r < rows; ++r) f(r * cols, r * global_cols + static_cast<size_t>(t.slice.start), cols);
}

// Offsets of one block's tensors, in elements. A block with experts (moe) has the router and its experts in
// place of the dense MLP (fc_*, fcproj_* then unused).
struct BlockOffsets {
  size_t ln1_w, ln1_b, qkv_w, qkv_b, proj_w, proj_b, ln2_w, ln2_b, fc_w, fc_b, fcproj_w, fcproj_b;
  bool moe;
  size_t router_w, experts_fc_w, experts_fc_b, experts_proj_w, experts_proj_b;
};

class ParamLayout {
 public:
  // held: which units this rank holds (a pipeline stage's; empty = all). The layout then has only their
  // tensors, each unit's internal layout unchanged; a unit not held is an empty range at its place.
  explicit ParamLayout(const GPTConfig& cfg, const ModelSlice& slice = {}, const std::vector<bool>& held = {});
  const std::vector<TensorSpec>& tensors() const { return tensors_; }
  const TensorSpec& find(const std::string& name) const;  // throws if unknown
  size_t total() const { return total_; }
  size_t matmul_params() const { return matmul_params_; }  // this rank's L·12C²/t + C·V/t, for model FLOPs
  const ModelSlice& slice() const { return slice_; }
  size_t tok_emb = 0, pos_emb = 0, lnf_w = 0, lnf_b = 0, lm_head = 0;  // valid where the unit is held
  std::vector<BlockOffsets> blocks;

  // Units: the contiguous pieces a layout gathers, frees and reduces as one (FSDP's "wrapped units").
  // Unit 0 = embeddings, units 1…L = blocks, unit L+1 = final LN + LM head.
  int units() const { return static_cast<int>(unit_begin_.size()); }
  bool holds(int u) const { return unit_end(u) > unit_begin(u); }
  size_t unit_begin(int u) const { return unit_begin_[u]; }
  size_t unit_end(int u) const { return u + 1 < units() ? unit_begin_[u + 1] : total_; }

 private:
  size_t add(const std::string& name, std::vector<int64_t> shape, Init init, bool decay, TensorSlice slice = {},
             std::vector<int64_t> global_shape = {});
  ModelSlice slice_;
  std::vector<TensorSpec> tensors_;
  std::vector<size_t> unit_begin_;
  size_t total_ = 0, matmul_params_ = 0;
};

// One rank's tensors, as its whole local flat store holds them (elem_bytes per element), copied into their
// places in a store of the whole model (layout `whole`, unsliced) — how a checkpoint of a tensor-parallel
// run is assembled from its ranks' slices.
void place_slices(const ParamLayout& local, const unsigned char* local_store, const ParamLayout& whole,
                  unsigned char* whole_store, size_t elem_bytes);

// Fill params with the initial weights: N(0, 0.02) matrices (residual projections scaled by
// 1/sqrt(2L)), zero biases, unit LN gains. Element i of the WHOLE tensor t is
// rng(seed, "init:" + name).normal(i), so any range [begin, end) of the flat buffer — a ZeRO shard, a
// tensor-parallel slice, both — is generated alone and equals the same elements of the whole model.
template <class T>
void init_params(const ParamLayout& layout, const GPTConfig& cfg, uint64_t seed, T* flat, size_t begin, size_t end);

}  // namespace shardlab
