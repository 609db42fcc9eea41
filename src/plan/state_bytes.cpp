// plan/state_bytes.cpp — bytes per parameter per recipe, exact totals and the GPT parameter count.
// See state_bytes.h for what is modelled and what is left out.
#include "plan/state_bytes.h"

namespace shardlab::plan {

namespace {
constexpr std::uint64_t kBf16 = 2;
constexpr std::uint64_t kInt8 = 1;

// Bytes of the --dtype scalar: params, grads and states without mixed precision.
std::uint64_t scalar_bytes(Dtype d) { return d == Dtype::f64 ? 8 : 4; }
}  // namespace

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
  // Full-precision values (master, m, v, momentum, fp32-accumulated grads): fp32 with --mixed bf16, which
  // computes in f32 (the trainer rejects bf16 with f64), else the --dtype scalar.
  const std::uint64_t full = r.bf16() ? 4 : scalar_bytes(r.dtype);
  // claim C3: "8-bit Adam shrinks the optimizer's 12 bytes to about 3". ASSUMPTION: we take the chapter's
  // arithmetic literally — every optimizer state that would be 4 bytes is stored in 1 byte (master 1 + m 1 +
  // v 1 = 3), a uniform 4x cut. Real bitsandbytes keeps m and v at 1 byte each (+ one fp32 absmax per
  // 2048-element block, ~0.002 B) and the master at whatever precision the setup keeps it (fp32 → ~6 B,
  // none → ~2 B); the chapter's "~3" sits between. Block scales are left out so totals stay integers.
  const std::uint64_t state = r.optimizer == Optimizer::adam8bit ? kInt8 : full;
  // claim C1: bf16 param 2 + bf16 grad 2; claim C3: fp32 grad accumulation adds 2 bytes. Without mixed
  // precision both are plain --dtype scalars.
  b[Mem::param] = r.bf16() ? kBf16 : full;
  b[Mem::grad] = r.bf16() && r.grad_accum == GradAccum::bf16 ? kBf16 : full;
  // claim C1: master 4 + m 4 + v 4 = 12 bytes, the largest share; SGD+momentum keeps one state (C3), momentum
  // 0 none; the master exists with mixed bf16 unless --master none (C2: it avoids swamping).
  for (Mem c : kOptimizerStates)
    if (r.keeps(c)) b[c] = state;
  return b;
}

PerCategory model_state_bytes(const Recipe& r, std::uint64_t psi) {
  // claim C1, C6: model states depend on Ψ only — no batch, no sequence.
  PerCategory per = bytes_per_param(r);
  PerCategory out;
  for (int i = 0; i < kNumCategories; ++i) out.v[i] = per.v[i] * psi;
  return out;
}

std::uint64_t expert_param_count(const GptDims& d) {
  const std::uint64_t C = d.hidden, F = d.moe.width(C);
  return 2 * C * F + F + C;
}

std::uint64_t block_param_count(const GptDims& d, std::uint64_t layer, std::uint64_t t, std::uint64_t ep) {
  const std::uint64_t C = d.hidden;
  const std::uint64_t attention = 2 * C                        // ln1 gamma, beta
                                  + 3 * C * C / t + 3 * C / t  // fused qkv (3C, C) + bias: this rank's heads
                                  + C * C / t + C              // W^O (C, C): their columns, + bias (whole)
                                  + 2 * C;                     // ln2
  if (!d.moe.in_block(layer))
    return attention + 4 * C * C / t + 4 * C / t        // fc (4C, C) + bias: this rank's rows
           + 4 * C * C / t + C;                         // fc proj (C, 4C) + bias
  return attention + d.moe.experts * C                  // the router (E, C), whole on every rank
         + d.moe.experts / ep * expert_param_count(d);  // this rank's experts
}

std::uint64_t gpt_param_count(const GptDims& d) {
  const std::uint64_t V = d.vocab, T = d.seq, C = d.hidden;
  const std::uint64_t embeddings = V * C + T * C;  // wte (V, C) + wpe (T, C)
  std::uint64_t blocks = 0;
  for (std::uint64_t l = 0; l < d.layers; ++l) blocks += block_param_count(d, l);
  const std::uint64_t final_ln = 2 * C;
  const std::uint64_t lm_head = C * V;  // untied, no bias
  return embeddings + blocks + final_ln + lm_head;
}

std::uint64_t gpt_matmul_param_count(const GptDims& d) {
  const std::uint64_t C = d.hidden, Lm = d.moe.blocks(d.layers);
  return (d.layers - Lm) * 12 * C * C + Lm * (4 * C * C + d.moe.experts * C + d.moe.top_k * 2 * C * d.moe.width(C)) +
         C * d.vocab;
}

std::uint64_t gpt_flops_per_token(const GptDims& d, std::uint64_t s) {
  return 6 * gpt_matmul_param_count(d) + 12 * d.layers * s * d.hidden;
}

}  // namespace shardlab::plan
