// plan/model_states.h — the chapter's model-state accounting (§2.4.1): bytes per parameter for a
// precision/optimizer recipe, split into the memory ledger's categories, and exact totals for a
// parameter count Ψ. Also the parameter count of this project's own GPT, so `plan` and the
// trainer's ledger agree to the byte, and the matmul parameter count behind the model-FLOPs formula.
//
// Leaves out: activations (plan/activations.h), sharding (DP/ZeRO/FSDP per-rank bytes are in
// plan/sharding.h; TP/PP are not modelled yet), the ledger.json check (plan/ledger_check.h),
// temporary buffers, allocator fragmentation, and any optimizer other than AdamW, SGD(+momentum)
// and the chapter's 8-bit Adam (plan only, claim C3).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/ledger.h"

namespace shardlab::plan {

// The model-state categories are the memory ledger's first six (core/ledger.h: param, grad, master,
// adam_m, adam_v, momentum), so formulas and measurements share their names.
constexpr int kNumCategories = 6;
inline Mem category_at(int i) { return static_cast<Mem>(i); }

enum class Optimizer { adamw, sgd, adam8bit };  // adam8bit: plan only, never trained
enum class Dtype { f32, f64 };                  // --dtype; with mixed bf16 compute is f32
enum class Mixed { none, bf16 };                // --mixed
enum class GradAccum { bf16, fp32 };            // --grad-accum-dtype (only with mixed bf16)
enum class Master { fp32, none };               // --master (only with mixed bf16)

// One training recipe. Defaults are the chapter's C1 recipe: AdamW, bf16 mixed, fp32 master.
struct Recipe {
  Optimizer optimizer = Optimizer::adamw;
  Mixed mixed = Mixed::bf16;
  Dtype dtype = Dtype::f32;
  GradAccum grad_accum = GradAccum::bf16;
  Master master = Master::fp32;
  double momentum = 0.9;  // SGD only; 0 → no momentum state
};

// Parsers for the CLI / ledger spellings; return false on an unknown word.
bool parse_optimizer(const std::string& s, Optimizer* out);   // adamw | sgd | adam8bit
bool parse_dtype(const std::string& s, Dtype* out);           // f32 | f64
bool parse_mixed(const std::string& s, Mixed* out);           // none | bf16
bool parse_grad_accum(const std::string& s, GradAccum* out);  // bf16 | fp32
bool parse_master(const std::string& s, Master* out);         // fp32 | none
const char* optimizer_name(Optimizer o);
const char* dtype_name(Dtype d);
const char* mixed_name(Mixed m);
const char* grad_accum_name(GradAccum g);
const char* master_name(Master m);
std::string recipe_label(const Recipe& r);  // e.g. "adamw, mixed bf16, f32, grad bf16, master fp32"

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
struct GptDims {
  std::uint64_t vocab = 256;
  std::uint64_t seq = 64;      // T: learned position embeddings
  std::uint64_t hidden = 128;  // C
  std::uint64_t layers = 4;    // L
};

// Every trainable parameter: V·C + T·C + L·(12C² + 13C) + 2C + C·V.
std::uint64_t gpt_param_count(const GptDims& d);

// Parameters that sit in matmuls: N_matmul = L·12·C² + C·V (biases, LN and embeddings left out).
std::uint64_t gpt_matmul_param_count(const GptDims& d);

// Model FLOPs per trained token (forward + backward) at sequence length s:
// 6·N_matmul + 12·L·s·C (the second term is attention's QKᵀ and A·V, which have no parameters).
std::uint64_t gpt_flops_per_token(const GptDims& d, std::uint64_t s);

}  // namespace shardlab::plan
