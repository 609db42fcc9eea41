// plan/activations.h — the chapter's activation estimate (§2.4.2, claims C4, C5): bytes a transformer
// layer keeps from forward for backward, s·b·h·(34 + 5·a·s/h) with 2-byte activations, split into
// the part linear in s (34·s·b·h) and the attention scores' quadratic part (5·a·s²·b). FlashAttention
// keeps no s×s scores, so it drops the quadratic term. Whole model = L × per layer.
//
// Leaves out: embeddings, final LN, logits and loss (outside the L layers), the O(a·s·b) softmax
// statistics FlashAttention does keep, recompute, and TP/SP/CP division. It is the chapter's
// illustrative estimate, not an exact count of this trainer's buffers (which hold f32/f64 values
// and, by default, no dropout masks), so it is not compared byte-for-byte with a ledger.
#pragma once

#include <cstdint>
#include <string>

#include "model/activation_policy.h"

#include "model/activation_policy.h"

namespace shardlab::plan {

// The attention kernel is the model's (model/activation_policy.h).

struct ActivationDims {
  std::uint64_t hidden = 128;     // h
  std::uint64_t layers = 4;       // L
  std::uint64_t heads = 4;        // a
  std::uint64_t seq = 64;         // s
  std::uint64_t micro_batch = 1;  // b
};

// Exact integer bytes of the formula.
struct ActivationEstimate {
  std::uint64_t linear_per_layer = 0;     // 34·s·b·h
  std::uint64_t quadratic_per_layer = 0;  // 5·a·s²·b (0 with flash attention)
  std::uint64_t per_layer = 0;            // linear + quadratic
  std::uint64_t total = 0;                // L · per_layer
};

// claim C4 (naive), claim C5 (flash).
ActivationEstimate estimate_activations(const ActivationDims& d, AttentionKernel attn);

}  // namespace shardlab::plan
