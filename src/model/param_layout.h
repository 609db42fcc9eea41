// Parameter layout: every tensor of the GPT as a named view {offset, shape} into ONE flat buffer,
// in a fixed global order (embeddings, block 0 … block L-1, final LN, LM head). Params, grads and
// optimizer states all use this layout, so data parallel is one all-reduce of one buffer and
// ZeRO/FSDP shard it by {offset, size}. Weights are (out, in) row-major: y = x · Wᵀ + b.
// The fused QKV rows are ordered per head: [q_h, k_h, v_h] for h = 0…NH-1, so a head is a
// contiguous slice (what tensor parallelism splits).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"

namespace shardlab {

enum class Init { normal, normal_residual, zeros, ones };

struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;
  size_t offset = 0;  // elements from the start of the flat buffer
  size_t numel = 0;
  Init init = Init::zeros;
  bool decay = false;  // weight decay applies to matrices (and embeddings), not to biases or LN
};

// Offsets of one block's tensors, in elements.
struct BlockOffsets {
  size_t ln1_w, ln1_b, qkv_w, qkv_b, proj_w, proj_b, ln2_w, ln2_b, fc_w, fc_b, fcproj_w, fcproj_b;
};

class ParamLayout {
 public:
  explicit ParamLayout(const GPTConfig& cfg);
  const std::vector<TensorSpec>& tensors() const { return tensors_; }
  const TensorSpec& find(const std::string& name) const;  // throws if unknown
  size_t total() const { return total_; }
  size_t matmul_params() const { return matmul_params_; }  // L·12C² + C·V, for model FLOPs
  size_t tok_emb, pos_emb, lnf_w, lnf_b, lm_head;
  std::vector<BlockOffsets> blocks;

  // Units: the contiguous pieces a layout gathers, frees and reduces as one (FSDP's "wrapped units").
  // Unit 0 = embeddings, units 1…L = blocks, unit L+1 = final LN + LM head.
  int units() const { return static_cast<int>(unit_begin_.size()); }
  size_t unit_begin(int u) const { return unit_begin_[u]; }
  size_t unit_end(int u) const { return u + 1 < units() ? unit_begin_[u + 1] : total_; }

 private:
  size_t add(const std::string& name, std::vector<int64_t> shape, Init init, bool decay);
  std::vector<TensorSpec> tensors_;
  std::vector<size_t> unit_begin_;
  size_t total_ = 0, matmul_params_ = 0;
};

// Fill params with the initial weights: N(0, 0.02) matrices (residual projections scaled by
// 1/sqrt(2L)), zero biases, unit LN gains. Element i of tensor t is rng(seed, "init:" + name).normal(i),
// so any slice [begin, end) of the flat buffer can be generated alone.
template <class T>
void init_params(const ParamLayout& layout, const GPTConfig& cfg, uint64_t seed, T* flat, size_t begin, size_t end);

}  // namespace shardlab
