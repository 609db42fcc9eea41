// plan/tp_bytes.cpp — tensor and sequence parallelism's formulas (see tp_bytes.h).
#include "plan/tp_bytes.h"

#include "core/exact_sum.h"

#include <algorithm>

namespace shardlab::plan {

namespace {
using u64 = std::uint64_t;
}  // namespace

std::vector<std::pair<u64, bool>> tp_tensor_runs(const GptDims& d, u64 t, const std::vector<bool>& held, u64 ep) {
  const u64 C = d.hidden, V = d.vocab, T = d.seq;
  auto holds = [&](u64 unit) { return held.empty() || held[unit]; };
  std::vector<std::pair<u64, bool>> v;
  if (holds(0)) v = {{V * C, true}, {T * C, true}};  // tok_emb, pos_emb
  for (u64 l = 0; l < d.layers; ++l) {
    if (!holds(l + 1)) continue;
    v.insert(v.end(), {{C, true},
                       {C, true},  // ln1 weight, bias
                       {3 * C * C / t, false},
                       {3 * C / t, false},  // qkv: this rank's heads' rows
                       {C * C / t, false},  // W^O: their columns
                       {C, true},           // W^O's bias, added once after the sum
                       {C, true},
                       {C, true}});  // ln2
    if (d.moe.in_block(l))           // the router and this rank's experts, whole on every tp rank
      v.insert(v.end(), {{d.moe.experts * C, true}, {d.moe.experts / ep * expert_param_count(d), true}});
    else
      v.insert(v.end(), {{4 * C * C / t, false},
                         {4 * C / t, false},      // fc rows
                         {4 * C * C / t, false},  // fc-proj columns
                         {C, true}});             // fc-proj's bias
  }
  if (holds(d.layers + 1)) v.insert(v.end(), {{C, true}, {C, true}, {V / t * C, false}});  // ln_f, lm_head rows
  return v;
}

u64 tp_param_count(const GptDims& d, u64 t, u64 ep) {
  u64 n = 0;
  for (const auto& [size, replicated] : tp_tensor_runs(d, t, {}, ep)) n += size;
  return n;
}

u64 replicated_in_range(const GptDims& d, u64 t, u64 lo, u64 hi, const std::vector<bool>& held) {
  u64 at = 0, n = 0;
  for (const auto& [size, replicated] : tp_tensor_runs(d, t, held)) {
    const u64 a = std::max(lo, at), b = std::min(hi, at + size);
    if (replicated && a < b) n += b - a;
    at += size;
  }
  return n;
}

std::vector<TpPhase> tp_step_phases(const TpShape& s, u64 rank, u64 grad_lo, u64 grad_hi) {
  std::vector<TpPhase> v;
  const u64 t = s.tp;
  if (t <= 1) return v;
  // The blocks this rank runs: a dense one has two regions (attention, MLP), a MoE block one (its experts run
  // outside the regions, on rows every tp rank holds).
  u64 L = 0, regions = 0;
  for (u64 l = 0; l < s.gpt.layers; ++l)
    if (s.held.empty() || s.held[l + 1]) ++L, regions += s.gpt.moe.in_block(l) ? 1 : 2;
  const u64 tokens = s.gpt.seq / s.cp;  // this rank's tokens of each sample
  const u64 n = s.micro_batch * tokens * s.gpt.hidden, A = s.accum;
  const u64 again = s.recompute == Recompute::full ? 1 : 0;  // the recomputed forward talks again
  auto phase = [&](std::string what, std::string purpose, RingOp op, u64 times, const std::vector<u64>& counts,
                   u64 elem_bytes) {
    u64 payload = 0;
    for (u64 c : counts) payload += c;
    v.push_back(
        {std::move(what), std::move(purpose), op, times, payload, ring_sent_elements(op, counts, rank), elem_bytes});
  };
  // The exact mode's sums (model/linear_exact.h) travel as 32-byte order-free sums instead of the compute type.
  const u64 sums = s.exact ? sizeof(ExactSum) : s.act_bytes;
  if (s.held.empty() || s.held.back()) {  // the vocabulary-parallel head
    const u64 rows = s.micro_batch * tokens;
    if (s.exact) {
      phase("all-reduces of the parallel cross-entropy's row max and target logit (forward)", "vocab",
            RingOp::all_reduce, A * 2, even_chunks(rows, t), s.act_bytes);
      phase("all-reduce of the rows' Σ exp as exact sums (forward)", "vocab", RingOp::all_reduce, A,
            even_chunks(rows, t), sums);
    } else {
      phase("all-reduces of the parallel cross-entropy's row values (forward: max, Σ exp, target logit)", "vocab",
            RingOp::all_reduce, A * 3, even_chunks(rows, t), s.act_bytes);
    }
    if (!s.sequence_parallel) {
      phase("all-reduce of the head input's gradient (f, backward)", "vocab", RingOp::all_reduce, A, even_chunks(n, t),
            sums);
    } else {
      const std::vector<u64> shards(t, n / t);
      phase("all-gather of the head's input along s (forward, and again for the weight gradient)", "vocab",
            RingOp::all_gather, A * 2, shards, s.act_bytes);
      phase("reduce-scatter of the head input's gradient (backward)", "vocab", RingOp::reduce_scatter, A, shards, sums);
    }
  }
  if (!s.sequence_parallel) {
    const std::vector<u64> chunks = even_chunks(n, t);
    phase("all-reduce of the row-parallel partial sums (g, forward: W^O and fc-proj)", "", RingOp::all_reduce,
          regions * A * (1 + again), chunks, sums);
    phase("all-reduce of the region inputs' gradients (f, backward: before LN1 and LN2)", "", RingOp::all_reduce,
          regions * A, chunks, sums);
    if (s.exact)  // the gradient norm's one exact sum, merged over tp once per step
      phase("all-reduce of the norm's exact sum", "exact_norm", RingOp::all_reduce, 1, even_chunks(1, t), sums);
    return v;
  }
  const std::vector<u64> shards(t, n / t);
  phase("all-gather of the region inputs along s (forward) and of the output gradients (backward)", "",
        RingOp::all_gather, L * A * (4 + 2 * again), shards, s.act_bytes);
  phase("reduce-scatter of the partial sums (forward) and of the input gradients (backward)", "",
        RingOp::reduce_scatter, L * A * (4 + 2 * again), shards, sums);
  phase("all-gather of each region's input again, for the weight gradients", "regather", RingOp::all_gather, L * A * 2,
        shards, s.act_bytes);
  const u64 rep = replicated_in_range(s.gpt, t, grad_lo, grad_hi, s.held);
  if (rep > 0)
    phase("all-reduce of the replicated tensors' gradients (LayerNorms, biases, embeddings, head)", "replicated_grads",
          RingOp::all_reduce, 1, even_chunks(rep, t), s.exact ? sums : s.grad_bytes);
  if (s.exact) {  // the norm's and the loss's exact sums, merged over tp once per step (each rank holds its rows')
    phase("all-reduce of the norm's exact sum", "exact_norm", RingOp::all_reduce, 1, even_chunks(1, t), sums);
    phase("all-reduce of the loss's exact sum", "exact_loss", RingOp::all_reduce, 1, even_chunks(1, t), sums);
  }
  return v;
}

TpStepBytes tp_step_bytes(const std::vector<TpPhase>& phases) {
  TpStepBytes b;
  for (const TpPhase& p : phases)
    (p.purpose == "regather"           ? b.regather
     : p.purpose == "replicated_grads" ? b.replicated_grads
     : p.purpose == "vocab"            ? b.vocab
                                       : b.region) += p.bytes();
  return b;
}

}  // namespace shardlab::plan
