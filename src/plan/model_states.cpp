// plan/model_states.cpp — bytes per parameter per recipe, exact totals and the GPT parameter count.
// See model_states.h for what is modelled and what is left out.
#include "plan/model_states.h"

#include <sstream>

namespace shardlab::plan {

namespace {
constexpr std::uint64_t kBf16 = 2;
constexpr std::uint64_t kInt8 = 1;

// Bytes of the --dtype scalar: params, grads and states without mixed precision.
std::uint64_t scalar_bytes(Dtype d) { return d == Dtype::f64 ? 8 : 4; }
}  // namespace

bool parse_optimizer(const std::string& s, Optimizer* out) {
  if (s == "adamw") {
    *out = Optimizer::adamw;
    return true;
  }
  if (s == "sgd") {
    *out = Optimizer::sgd;
    return true;
  }
  if (s == "adam8bit") {
    *out = Optimizer::adam8bit;
    return true;
  }
  return false;
}
bool parse_dtype(const std::string& s, Dtype* out) {
  if (s == "f32") {
    *out = Dtype::f32;
    return true;
  }
  if (s == "f64") {
    *out = Dtype::f64;
    return true;
  }
  return false;
}
bool parse_mixed(const std::string& s, Mixed* out) {
  if (s == "none") {
    *out = Mixed::none;
    return true;
  }
  if (s == "bf16") {
    *out = Mixed::bf16;
    return true;
  }
  return false;
}
bool parse_grad_accum(const std::string& s, GradAccum* out) {
  if (s == "bf16") {
    *out = GradAccum::bf16;
    return true;
  }
  if (s == "fp32") {
    *out = GradAccum::fp32;
    return true;
  }
  return false;
}
bool parse_master(const std::string& s, Master* out) {
  if (s == "fp32") {
    *out = Master::fp32;
    return true;
  }
  if (s == "none") {
    *out = Master::none;
    return true;
  }
  return false;
}

const char* optimizer_name(Optimizer o) {
  switch (o) {
    case Optimizer::adamw: return "adamw";
    case Optimizer::sgd: return "sgd";
    case Optimizer::adam8bit: return "adam8bit";
  }
  return "?";
}
const char* dtype_name(Dtype d) { return d == Dtype::f64 ? "f64" : "f32"; }
const char* mixed_name(Mixed m) { return m == Mixed::bf16 ? "bf16" : "none"; }
const char* grad_accum_name(GradAccum g) { return g == GradAccum::fp32 ? "fp32" : "bf16"; }
const char* master_name(Master m) { return m == Master::fp32 ? "fp32" : "none"; }

std::string recipe_label(const Recipe& r) {
  std::string s = optimizer_name(r.optimizer);
  if (r.optimizer == Optimizer::sgd) {
    std::ostringstream m;
    m << r.momentum;
    s += " (momentum " + m.str() + ")";
  }
  if (r.mixed == Mixed::bf16) {
    s += std::string(", mixed bf16, grad accum ") + grad_accum_name(r.grad_accum) + ", master " + master_name(r.master);
  } else {
    s += std::string(", pure ") + dtype_name(r.dtype);
  }
  return s;
}

std::uint64_t PerCategory::total() const {
  std::uint64_t t = 0;
  for (std::uint64_t x : v) t += x;
  return t;
}

std::uint64_t PerCategory::optimizer_total() const {
  return (*this)[Mem::master] + (*this)[Mem::adam_m] + (*this)[Mem::adam_v] + (*this)[Mem::momentum];
}

PerCategory bytes_per_param(const Recipe& r) {
  PerCategory b;
  const bool mixed = r.mixed == Mixed::bf16;
  // Full-precision states (master, m, v, momentum, fp32-accumulated grads): fp32 with --mixed bf16,
  // which computes in f32 (the trainer rejects bf16 with f64), else the --dtype scalar.
  const std::uint64_t full = mixed ? 4 : scalar_bytes(r.dtype);

  // Weights and gradients. claim C1: bf16 param 2 + bf16 grad 2; claim C3: fp32 grad accumulation
  // adds 2 bytes. Without mixed precision both are plain --dtype scalars and there is no master.
  b[Mem::param] = mixed ? kBf16 : full;
  b[Mem::grad] = mixed ? (r.grad_accum == GradAccum::fp32 ? full : kBf16) : full;
  const bool has_master = mixed && r.master == Master::fp32;  // claim C2: master avoids swamping

  switch (r.optimizer) {
    case Optimizer::adamw:
      // claim C1: master 4 + m 4 + v 4 = 12 bytes, the largest share.
      b[Mem::master] = has_master ? full : 0;
      b[Mem::adam_m] = full;
      b[Mem::adam_v] = full;
      break;
    case Optimizer::sgd:
      // claim C3: SGD+momentum keeps one state (4 B in fp32); momentum 0 keeps none.
      b[Mem::master] = has_master ? full : 0;
      b[Mem::momentum] = r.momentum > 0.0 ? full : 0;
      break;
    case Optimizer::adam8bit:
      // claim C3: "8-bit Adam shrinks the optimizer's 12 bytes to about 3". ASSUMPTION: we take
      // the chapter's arithmetic literally — every optimizer state that would be 4 bytes is
      // stored in 1 byte (master 1 + m 1 + v 1 = 3), a uniform 4x cut. Real bitsandbytes keeps
      // m and v at 1 byte each (+ one fp32 absmax per 2048-element block, ~0.002 B) and the
      // master at whatever precision the setup keeps it (fp32 → ~6 B, none → ~2 B); the
      // chapter's "~3" sits between. Block scales are left out so totals stay integers.
      b[Mem::master] = has_master ? kInt8 : 0;
      b[Mem::adam_m] = kInt8;
      b[Mem::adam_v] = kInt8;
      break;
  }
  return b;
}

PerCategory model_state_bytes(const Recipe& r, std::uint64_t psi) {
  // claim C1, C6: model states depend on Ψ only — no batch, no sequence.
  PerCategory per = bytes_per_param(r);
  PerCategory out;
  for (int i = 0; i < kNumCategories; ++i) out.v[i] = per.v[i] * psi;
  return out;
}

std::uint64_t gpt_param_count(const GptDims& d) {
  const std::uint64_t V = d.vocab, T = d.seq, C = d.hidden, L = d.layers;
  const std::uint64_t embeddings = V * C + T * C;  // wte (V, C) + wpe (T, C)
  const std::uint64_t block = 2 * C                // ln1 gamma, beta
                              + 3 * C * C + 3 * C  // fused qkv (C, 3C) + bias
                              + C * C + C          // W^O (C, C) + bias
                              + 2 * C              // ln2
                              + 4 * C * C + 4 * C  // fc (C, 4C) + bias
                              + 4 * C * C + C;     // fc proj (4C, C) + bias
  const std::uint64_t final_ln = 2 * C;
  const std::uint64_t lm_head = C * V;  // untied, no bias
  return embeddings + L * block + final_ln + lm_head;
}

std::uint64_t gpt_matmul_param_count(const GptDims& d) {
  const std::uint64_t C = d.hidden;
  return d.layers * 12 * C * C + C * d.vocab;
}

std::uint64_t gpt_flops_per_token(const GptDims& d, std::uint64_t s) {
  return 6 * gpt_matmul_param_count(d) + 12 * d.layers * s * d.hidden;
}

}  // namespace shardlab::plan
