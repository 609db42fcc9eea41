// Parameter layout and layout-independent initialisation (see param_layout.h).
#include "model/param_layout.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "core/rng.h"

namespace shardlab {

size_t ParamLayout::add(const std::string& name, std::vector<int64_t> shape, Init init, bool decay, TensorSlice slice,
                        std::vector<int64_t> global_shape) {
  TensorSpec t;
  t.name = name;
  t.shape = std::move(shape);
  t.global_shape = global_shape.empty() ? t.shape : std::move(global_shape);
  t.slice = slice;
  t.numel = 1;
  for (int64_t d : t.shape) t.numel *= static_cast<size_t>(d);
  t.offset = total_;
  t.init = init;
  t.decay = decay;
  total_ += t.numel;
  tensors_.push_back(t);
  return t.offset;
}

ParamLayout::ParamLayout(const GPTConfig& cfg, const ModelSlice& slice, const std::vector<bool>& held) : slice_(slice) {
  const int64_t C = cfg.hidden, V = cfg.vocab, T = cfg.seq, t = slice.tp, r = slice.tp_rank;
  const int64_t CL = C / t, F = 4 * C / t;  // this rank's attention width (its heads) and MLP width
  const TensorSlice rows3{0, 3 * CL * r}, cols{1, CL * r}, rowsF{0, F * r}, colsF{1, F * r};
  auto holds = [&](int unit) { return held.empty() || held[unit]; };
  unit_begin_.push_back(total_);
  if (holds(0)) {
    tok_emb = add("tok_emb", {V, C}, Init::normal, true);  // (V, C)
    pos_emb = add("pos_emb", {T, C}, Init::normal, true);  // (T, C)
  }
  for (int l = 0; l < cfg.layers; ++l) {
    const std::string p = "blocks." + std::to_string(l) + ".";
    unit_begin_.push_back(total_);
    BlockOffsets b{};
    if (holds(l + 1)) {
      b.ln1_w = add(p + "ln1.weight", {C}, Init::ones, false);
      b.ln1_b = add(p + "ln1.bias", {C}, Init::zeros, false);
      // (3C, C), rows per head [q,k,v]: this rank's heads are rows [3·CL·r, 3·CL·(r+1))
      b.qkv_w = add(p + "attn.qkv.weight", {3 * CL, C}, Init::normal, true, rows3, {3 * C, C});
      b.qkv_b = add(p + "attn.qkv.bias", {3 * CL}, Init::zeros, false, rows3, {3 * C});
      // W^O (C, C): the columns that multiply this rank's heads
      b.proj_w = add(p + "attn.proj.weight", {C, CL}, Init::normal_residual, true, cols, {C, C});
      b.proj_b = add(p + "attn.proj.bias", {C}, Init::zeros, false);
      b.ln2_w = add(p + "ln2.weight", {C}, Init::ones, false);
      b.ln2_b = add(p + "ln2.bias", {C}, Init::zeros, false);
      if (!cfg.moe.in_block(l)) {
        b.fc_w = add(p + "mlp.fc.weight", {F, C}, Init::normal, true, rowsF, {4 * C, C});  // (4C, C)
        b.fc_b = add(p + "mlp.fc.bias", {F}, Init::zeros, false, rowsF, {4 * C});
        b.fcproj_w = add(p + "mlp.proj.weight", {C, F}, Init::normal_residual, true, colsF, {C, 4 * C});  // (C, 4C)
        b.fcproj_b = add(p + "mlp.proj.bias", {C}, Init::zeros, false);
        matmul_params_ += static_cast<size_t>(12 * C * C / t);
      } else {  // the router (whole on every rank) and this rank's experts: all E, or E/ep of them from ep_rank·E/ep
        const int64_t E = cfg.moe.experts, El = E / slice.ep, FE = cfg.moe.width(cfg.hidden);
        const TensorSlice mine = slice.ep > 1 ? TensorSlice{0, El * slice.ep_rank} : TensorSlice{};
        b.moe = true;
        b.router_w = add(p + "moe.router.weight", {E, C}, Init::normal, true);  // (E, C)
        b.experts_fc_w = add(p + "moe.experts.fc.weight", {El, FE, C}, Init::normal, true, mine, {E, FE, C});
        b.experts_fc_b = add(p + "moe.experts.fc.bias", {El, FE}, Init::zeros, false, mine, {E, FE});
        b.experts_proj_w =
            add(p + "moe.experts.proj.weight", {El, C, FE}, Init::normal_residual, true, mine, {E, C, FE});
        b.experts_proj_b = add(p + "moe.experts.proj.bias", {El, C}, Init::zeros, false, mine, {E, C});
        for (size_t i = tensors_.size() - 4; i < tensors_.size(); ++i) tensors_[i].expert = true;
        // per token: attention's 4C²/t, the router's E·C, k experts' 2·C·F
        matmul_params_ += static_cast<size_t>(4 * C * C / t + E * C + cfg.moe.top_k * 2 * C * FE);
      }
    }
    blocks.push_back(b);
  }
  unit_begin_.push_back(total_);
  if (holds(cfg.layers + 1)) {
    lnf_w = add("ln_f.weight", {C}, Init::ones, false);
    lnf_b = add("ln_f.bias", {C}, Init::zeros, false);
    // (V, C), untied, no bias: vocabulary-parallel, this rank's rows [r·V/t, (r+1)·V/t)
    lm_head = add("lm_head.weight", {V / t, C}, Init::normal, true, TensorSlice{0, V / t * r}, {V, C});
    matmul_params_ += static_cast<size_t>(C * V / t);
  }
}

const TensorSpec& ParamLayout::find(const std::string& name) const {
  for (const TensorSpec& t : tensors_)
    if (t.name == name) return t;
  throw std::out_of_range("no parameter tensor named '" + name + "'");
}

void place_slices(const ParamLayout& local, const unsigned char* local_store, const ParamLayout& whole,
                  unsigned char* whole_store, size_t elem_bytes) {
  for (const TensorSpec& t : local.tensors()) {
    const TensorSpec& w = whole.find(t.name);
    for_each_run(t, [&](size_t l, size_t g, size_t count) {
      std::memcpy(whole_store + (w.offset + g) * elem_bytes, local_store + (t.offset + l) * elem_bytes,
                  count * elem_bytes);
    });
  }
}

template <class T>
void init_params(const ParamLayout& layout, const GPTConfig& cfg, uint64_t seed, T* flat, size_t begin, size_t end) {
  const double std_normal = 0.02, std_residual = 0.02 / std::sqrt(2.0 * cfg.layers);
  for (const TensorSpec& t : layout.tensors()) {
    if (std::max(begin, t.offset) >= std::min(end, t.offset + t.numel)) continue;
    RngStream rng = rng_stream(seed, "init:" + t.name);
    for_each_run(t, [&](size_t local, size_t whole, size_t count) {
      const size_t lo = std::max(begin, t.offset + local), hi = std::min(end, t.offset + local + count);
      for (size_t g = lo; g < hi; ++g) {
        const size_t i = whole + (g - t.offset - local);  // the element's index in the whole tensor
        double v = 0.0;
        switch (t.init) {
          case Init::normal: v = std_normal * rng.normal(i); break;
          case Init::normal_residual: v = std_residual * rng.normal(i); break;
          case Init::zeros: v = 0.0; break;
          case Init::ones: v = 1.0; break;
        }
        flat[g - begin] = static_cast<T>(v);
      }
    });
  }
}

template void init_params<float>(const ParamLayout&, const GPTConfig&, uint64_t, float*, size_t, size_t);
template void init_params<double>(const ParamLayout&, const GPTConfig&, uint64_t, double*, size_t, size_t);

}  // namespace shardlab
