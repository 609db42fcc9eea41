// plan/activations.cpp — the chapter's per-layer activation formula and its whole-model total.
// See activations.h for what is modelled and what is left out.
#include "plan/activations.h"

namespace shardlab::plan {

ActivationEstimate estimate_activations(const ActivationDims& d, AttentionKernel attn) {
  const std::uint64_t s = d.seq, b = d.micro_batch, h = d.hidden, a = d.heads;
  ActivationEstimate e;
  // claim C4: 34·s·b·h — QKV input, attention output, FFN intermediates, GELU input, dropout
  // masks, LayerNorm inputs; coefficients already assume 2-byte activations.
  e.linear_per_layer = 34 * s * b * h;
  // claim C4: s·b·h · 5·a·s/h = 5·a·s²·b — the s×s scores (and softmax/dropout of them) per head.
  // claim C5: FlashAttention recomputes scores block by block and keeps none of them.
  e.quadratic_per_layer = attn == AttentionKernel::flash ? 0 : 5 * a * s * s * b;
  e.per_layer = e.linear_per_layer + e.quadratic_per_layer;
  e.total = d.layers * e.per_layer;  // claim C4: whole model = L × per layer
  return e;
}

}  // namespace shardlab::plan
