// plan/memory_need.cpp — the per-rank memory estimate (see memory_need.h). The activation and workspace
// terms follow the buffers the trainer allocates per micro-batch (model/gpt.cpp), in elements of the
// compute type (4 bytes in f32 and with mixed bf16, 8 in f64).
#include "plan/memory_need.h"

#include <cmath>

namespace shardlab::plan {

MemoryNeed rank_memory_need(const RunShape& run) {
  using ld = long double;
  const ld V = run.gpt.vocab, T = run.gpt.seq, C = run.gpt.hidden, L = run.gpt.layers, NH = run.heads;
  const ld B = run.micro_batch, N = B * T;  // tokens of one micro-batch
  const ld elem = run.recipe.mixed == Mixed::none && run.recipe.dtype == Dtype::f64 ? 8 : 4;
  // Ψ, the shard S and the padded Ψ_pad as in gpt_param_count and shard_layout, in long double so that
  // absurd sizes (which overflow 64 bits) are estimated too, and refused.
  const ld psi = V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C + C * V;
  const ld G = run.layout.strategy == Strategy::hybrid ? ld(run.layout.ranks_per_node) : ld(run.layout.dp);
  const ld shard = std::ceil(psi / G), padded = G * shard;
  MemoryNeed need;
  const PerCategory per = bytes_per_param(run.recipe);
  for (int i = 0; i < kNumCategories; ++i)
    need.model_states += ld(per.v[i]) * (is_sharded(run.layout.strategy, category_at(i)) ? shard : padded);
  // Per micro-batch, kept for backward: every block's input and output (L + 1 residuals), per layer the
  // LayerNorm outputs and statistics, QKV, attention probabilities (NH·T per token), attention output,
  // the mid residual, the MLP's 4C pre- and post-GELU, then the final LayerNorm and the logits.
  const ld per_layer = N * (C + 2 + 3 * C + NH * T + C + C + C + 2 + 4 * C + 4 * C);
  need.activations = elem * ((L + 1) * N * C + L * per_layer + N * (C + 2) + N * V);
  // Backward scratch (7 residual-sized buffers, two 4C ones, attention's 2T²), f32 copies of bf16
  // weights and gradients, ZeRO-3's two gathered units, and ring buffers (≤ 1 MB per collective).
  const bool bf16 = run.recipe.mixed == Mixed::bf16;
  const bool shard_params = is_sharded(run.layout.strategy, Mem::param);
  const ld full = padded, unit = 12 * C * C + 13 * C + V * C;  // the largest unit: a block or the head
  need.workspace =
      elem * (N * C * 6 + N * 4 * C * 2 + 2 * T * T) + (bf16 && !shard_params ? 4 * full : 0) +
      (bf16 && run.recipe.grad_accum == GradAccum::bf16 && !is_sharded(run.layout.strategy, Mem::grad) ? 4 * full : 0) +
      (shard_params ? 2 * 2 * unit * elem : 0) + (run.layout.dp > 1 ? 2 * 1048576.0L : 0);
  return need;
}

}  // namespace shardlab::plan
