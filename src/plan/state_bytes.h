// plan/state_bytes.h — the chapter's model-state accounting (§2.4.1): bytes per parameter for a
// precision/optimizer recipe, split into the memory ledger's categories, and exact totals for a
// parameter count Ψ. Also the parameter count of this project's own GPT, so `plan` and the
// trainer's ledger agree to the byte, and the matmul parameter count behind the model-FLOPs formula.
//
// Leaves out: activations (plan/activations.h, plan/activation_items.h), what one rank holds (DP/ZeRO/FSDP
// in plan/sharding.h, tensor parallelism in plan/tp_bytes.h, pipeline stages in plan/pipeline_stages.h),
// the ledger.json check (check/ledger_check.h),
// temporary buffers, allocator fragmentation, and any optimizer other than AdamW, SGD(+momentum)
// and the chapter's 8-bit Adam (plan only, claim C3).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/ledger.h"
#include "optim/recipe.h"

namespace shardlab::plan {

// The model-state categories are the memory ledger's first six (core/ledger.h: param, grad, master,
// adam_m, adam_v, momentum), so formulas and measurements share their names.
constexpr int kNumCategories = 6;
inline Mem category_at(int i) { return static_cast<Mem>(i); }

// The recipe's vocabulary is the trainer's (optim/recipe.h): Recipe, Optimizer, Dtype, Mixed, GradAccum, Master.
using ::shardlab::Dtype;
using ::shardlab::GradAccum;
using ::shardlab::Master;
using ::shardlab::Mixed;
using ::shardlab::Optimizer;
using ::shardlab::Recipe;

// Unsigned integer amounts, one per category (bytes per parameter, or bytes).
struct PerCategory {
  std::array<std::uint64_t, kNumCategories> v{};
  std::uint64_t& operator[](Mem c) { return v[static_cast<int>(c)]; }
  std::uint64_t operator[](Mem c) const { return v[static_cast<int>(c)]; }
  std::uint64_t total() const;
  std::uint64_t optimizer_total() const;  // master + adam_m + adam_v + momentum
};

// Bytes per parameter for a recipe (all integers). Claims C1 (16), C3 (18, SGD 4 B state, 8-bit ~3).
PerCategory bytes_per_param(const Recipe& r);

// Exact bytes for psi parameters: bytes_per_param(r)[c] * psi for each category.
PerCategory model_state_bytes(const Recipe& r, std::uint64_t psi);

// ---- Parameter count of this project's GPT -----------------------------------------------------
// V vocab, T max positions, C hidden, L layers. Pre-LN blocks, fused QKV with bias, W^O with bias,
// MLP C→4C→C with biases, final LN, untied LM head without bias.
// A mixture of experts (claim C25, model/config.h's MoeConfig) replaces the MLP of every `every`-th block
// (l % every == 0) by a router (E, C) without bias and E experts, each C→F→C with biases.
struct ExpertDims {
  std::uint64_t experts = 0;  // E (0: every block dense)
  std::uint64_t top_k = 2;    // k
  std::uint64_t every = 1;
  std::uint64_t ffn = 0;  // F (0: 4C)
  bool on() const { return experts > 0; }
  bool in_block(std::uint64_t layer) const { return on() && layer % every == 0; }
  std::uint64_t width(std::uint64_t hidden) const { return ffn ? ffn : 4 * hidden; }
  std::uint64_t blocks(std::uint64_t layers) const { return on() ? (layers + every - 1) / every : 0; }
};

struct GptDims {
  std::uint64_t vocab = 256;
  std::uint64_t seq = 64;      // T: learned position embeddings
  std::uint64_t hidden = 128;  // C
  std::uint64_t layers = 4;    // L
  ExpertDims moe;              // dense by default
  GptDims() = default;
  GptDims(std::uint64_t v, std::uint64_t t, std::uint64_t c, std::uint64_t l, ExpertDims m = {})
      : vocab(v), seq(t), hidden(c), layers(l), moe(m) {}
};

// One expert: 2·C·F + F + C (fc (F, C) and its bias, proj (C, F) and its bias).
std::uint64_t expert_param_count(const GptDims& d);
// Block `layer` on a rank holding 1/t of attention (and of a dense MLP) and E/ep of the experts:
//   dense  12C²/t + 7C/t + 6C                                   (t = 1: 12C² + 13C)
//   MoE    4C²/t + 3C/t + 5C + E·C + (E/ep)·(2·C·F + F + C)     (the MLP's 8C² + 5C out, the router and experts in;
//          experts stay whole on every tp rank)
std::uint64_t block_param_count(const GptDims& d, std::uint64_t layer, std::uint64_t tp = 1, std::uint64_t ep = 1);

// Every trainable parameter: V·C + T·C + Σ_l block_param_count + 2C + C·V (dense: L·(12C² + 13C)).
std::uint64_t gpt_param_count(const GptDims& d);

// Parameters that sit in a token's matmuls: N_matmul = L·12·C² + C·V (biases, LN and embeddings left out); a MoE
// block counts attention's 4C², the router's E·C and the k experts a token visits, k·2·C·F (its active ones).
std::uint64_t gpt_matmul_param_count(const GptDims& d);

// Model FLOPs per trained token (forward + backward) at sequence length s:
// 6·N_matmul + 12·L·s·C (the second term is attention's QKᵀ and A·V, which have no parameters).
std::uint64_t gpt_flops_per_token(const GptDims& d, std::uint64_t s);

}  // namespace shardlab::plan
