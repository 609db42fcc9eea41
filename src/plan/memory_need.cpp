// plan/memory_need.cpp — the per-rank memory estimate (see memory_need.h), in elements of the compute
// type (4 bytes in f32 and with mixed bf16, 8 in f64) and the saved activations' width.
#include "plan/memory_need.h"

#include <algorithm>
#include <cmath>

#include "model/flash_blocks.h"
#include "model/ring_attention.h"

namespace shardlab::plan {

MemoryNeed rank_memory_need(const RunShape& run) {
  using ld = long double;
  using u64 = std::uint64_t;
  const ld V = run.gpt.vocab, T = run.gpt.seq, C = run.gpt.hidden, t = run.tp;
  const ld L = run.pp > 1 ? ld(run.stage_blocks) : ld(run.gpt.layers);  // the blocks of the largest stage
  const ld NH = ld(run.heads) / t;                                      // this rank's heads
  const ld B = run.micro_batch, N = B * (T / ld(run.cp));  // this rank's tokens of a micro-batch: the tp regions' rows
  const ld R = run.sequence_parallel ? N / t : N;          // the residual stream's rows
  const ld CL = C / t, F = 4 * C / t;                      // this rank's attention and MLP widths
  const ld elem = ld(run.recipe.compute_bytes());
  // Ψ_t (plan/tp_bytes.h), the shard S and the padded Ψ_pad as in shard_layout, in long double so
  // that absurd sizes (which overflow 64 bits) are estimated too, and refused.
  // A MoE block (claim C25, state_bytes.h's block_param_count): attention, the router and E/ep experts of width Fe.
  // With stages, the largest one is taken to hold as many of the MoE blocks as it can.
  const ExpertDims& moe = run.gpt.moe;
  const ld E = moe.experts, k = moe.top_k, Fe = moe.width(run.gpt.hidden), El = E / ld(std::max<u64>(run.ep, 1));
  const ld Lm = std::min(L, ld(moe.blocks(run.gpt.layers))), Ld = L - Lm;
  const ld dense_block = 12 * C * C / t + 7 * C / t + 6 * C;
  const ld moe_block = 4 * C * C / t + 3 * C / t + 5 * C + E * C + El * (2 * C * Fe + Fe + C);
  const ld psi = V * C + T * C + Ld * dense_block + Lm * moe_block + 2 * C + C * V / t;
  const ld G = run.layout.strategy == Strategy::hybrid ? ld(run.layout.ranks_per_node) : ld(run.layout.dp);
  const ld shard = std::ceil(psi / G), padded = G * shard;
  MemoryNeed need;
  const PerCategory per = bytes_per_param(run.recipe);
  for (int i = 0; i < kNumCategories; ++i)
    need.model_states += ld(per.v[i]) * (is_sharded(run.layout.strategy, category_at(i)) ? shard : padded);
  // The activation peak of plan/activation_items.h, item by item (a block's input x, the rest of its
  // record, the head's record), in long double like the rest.
  const bool bf16 = run.recipe.mixed == Mixed::bf16, naive = run.attention == AttentionKernel::naive;
  const bool full_recompute = run.recompute == Recompute::full;
  const ld w = bf16 ? 2 : elem, ws = elem;
  const ld head_probs = run.tp > 1 ? N * V / t : R * V;  // the vocabulary-parallel head: every row, V/t words
  const ld x = R * C * w, head_rest = R * C * w + 2 * R * ws + head_probs * ws;
  const ld probs = naive && run.recompute != Recompute::selective ? NH * T * N * w : 0;
  const ld attention = 3 * R * C * w + 4 * R * ws + 3 * N * CL * w + probs + (naive ? 0 : NH * N * ws) +
                       N * CL * w;            // LN1, resid_mid, LN2 and their statistics; Q, K, V; attention out
  const ld rest = attention + 2 * N * F * w;  // fc, GELU
  // A MoE block keeps the router's arrays and, at an even load, n = m = R·k rows on the experts' side, in the
  // compute type (plan/moe_items.h): probs, lse, gates, slots, counts; expert_in, pre, act; slot_out.
  const ld slots = R * k, groups = B;
  const ld moe_rest =
      attention + (R * E + R + R * k) * ws + 4 * (3 * R * k + groups * E + E + 1) + slots * (2 * C + 2 * Fe) * ws;
  const ld records = Ld * rest + Lm * moe_rest, largest = std::max(Ld > 0 ? rest : 0, Lm > 0 ? moe_rest : 0);
  need.activations = full_recompute ? (L + 1) * x + std::max(largest, head_rest) : (L + 1) * x + records + head_rest;
  need.activations *= ld(std::max<std::uint64_t>(run.stash, 1));  // a pipeline stage's micro-batches in flight
  // A chunk's compute buffers (model/model_chunk.cpp), the tp regions' buffers, the f32 copies of bf16
  // weights and gradients, ZeRO-3's two gathered units, and ring buffers (≤ 1 MB per collective).
  const bool shard_params = is_sharded(run.layout.strategy, Mem::param), sp = run.sequence_parallel;
  const ld unit = std::max(Ld > 0 ? dense_block : 0, Lm > 0 ? moe_block : 0) + V * C / t;  // a block or the head
  const ld chunk = 2 * R * C + N * C + 3 * N * CL + 2 * N * F + (naive ? 2 * T * T : ld(flash_scratch_elements())) +
                   (naive && (run.recompute == Recompute::selective || bf16) ? NH * T * N : 0) +
                   (full_recompute ? R * C : 0) + (sp ? 3 * N * C : 0) + (run.tp > 1 ? 3 * N : 0) +
                   (bf16 ? 4 * R * C + 3 * N * CL + N * CL + 2 * N * F : 0);
  need.workspace =
      elem * chunk + (bf16 && !shard_params ? 4 * padded : 0) +
      (bf16 && run.recipe.grad_accum == GradAccum::bf16 && !is_sharded(run.layout.strategy, Mem::grad) ? 4 * padded
                                                                                                       : 0) +
      (shard_params ? 2 * 2 * unit * elem : 0) + (run.layout.dp > 1 || t > 1 ? 2 * 1048576.0L : 0);
  // The MoE's transient rows (model/moe.cpp, parallel/expert_parallel.cpp): the router's logits and their
  // gradient, the dispatched and combined rows, the experts' outputs and backward's gradients, an all-to-all's
  // arrivals.
  if (Lm > 0) need.workspace += elem * (R * E + R * k + slots * (5 * C + 2 * Fe));
  // Ring attention's buffers (context parallelism, plan/cp_bytes.h): five K/V or dK/dV messages of
  // B·(T/c)·2·CL (comm_buffer), the running sum B·NH·(T/c) and the scratch (workspace).
  if (run.cp > 1)
    need.workspace +=
        elem * (5 * N * 2 * CL + NH * N + ld(ring_scratch_elements(static_cast<int>(run.gpt.hidden / run.heads))));
  // The optimizer's f32 view of bf16 gradients (and of bf16 weights without a master, when sharded).
  const ld opt_range = is_sharded(run.layout.strategy, Mem::adam_m) ? shard : padded;
  const bool bf16_grads = bf16 && run.recipe.grad_accum == GradAccum::bf16;
  const bool widen_weights = bf16 && run.recipe.master == Master::none && shard_params;
  need.workspace += 4 * opt_range * (ld(bf16_grads) + ld(widen_weights));
  return need;
}

}  // namespace shardlab::plan
