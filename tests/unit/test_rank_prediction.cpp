// tests/unit/test_rank_prediction.cpp — `plan --predict`'s rank by rank numbers (plan/rank_prediction.h) against the
// chapter's formulas written out here for the trainer's small GPT: Ψ from its dims, 16 B/param of AdamW in f32, ZeRO's
// shards, the DP ring's 2(N−1)/N, pipeline stages that hold the model between them, and the step time as the sum of
// its terms at given rates.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>

#include "plan/rank_prediction.h"

using namespace shardlab::plan;

namespace {
using u64 = std::uint64_t;

// Ψ of the GPT by hand: embeddings (V·h + s·h), per block 2 LayerNorms (2·2h), QKV (3h² + 3h), W^O (h² + h), MLP
// (4h² + 4h + 4h² + h); the final LayerNorm (2h) and the untied head (V·h).
u64 psi(u64 L, u64 h, u64 V, u64 s) {
  return V * h + s * h + L * (4 * h + 3 * h * h + 3 * h + h * h + h + 8 * h * h + 5 * h) + 2 * h + V * h;
}

PredictSpec spec(u64 world) {
  PredictSpec s;
  s.layers = 4, s.hidden = 64, s.heads = 4, s.seq = 32, s.vocab = 256, s.global_batch = 8, s.micro_batch = 2;
  s.world = world;
  return s;
}
}  // namespace

TEST_CASE("predict: one rank holds 16 B per parameter and sends nothing", "[rank_prediction]") {
  const LayoutPrediction p = predict_layout(spec(1), StepRates{});
  REQUIRE(p.ranks.size() == 1);
  CHECK(p.accum == 4);
  CHECK(p.ranks[0].params == psi(4, 64, 256, 32));
  CHECK(p.ranks[0].model_states == 16 * psi(4, 64, 256, 32));
  CHECK(p.ranks[0].dp_bytes + p.ranks[0].tp_bytes + p.ranks[0].pp_bytes + p.ranks[0].cp_bytes == 0);
}

TEST_CASE("predict: DP and ZeRO over 2 ranks — shards and the ring's bytes", "[rank_prediction]") {
  const u64 P = psi(4, 64, 256, 32);  // even: every shard is P/2
  REQUIRE(P % 2 == 0);
  for (int zero : {0, 1, 2, 3}) {
    PredictSpec s = spec(2);
    s.zero = zero;
    const LayoutPrediction p = predict_layout(s, StepRates{});
    REQUIRE(p.ranks.size() == 2);
    CHECK(p.accum == 2);
    const u64 states[] = {16 * P, 8 * P + 4 * P, 4 * P + 6 * P, 8 * P};  // C12: param, grad, m + v sharded in turn
    // f32 gradients and params, N = 2: all-reduce 2(N−1)/N·4P = 4P; ZeRO-2 a reduce-scatter per micro-batch (2) and
    // one gather (each 2P); ZeRO-3 per micro-batch a forward and a backward gather and a reduce-scatter.
    const u64 bytes[] = {4 * P, 4 * P, 3 * 2 * P, 6 * 2 * P};
    for (const RankPrediction& r : p.ranks) {
      CHECK(r.model_states == states[zero]);
      CHECK(r.dp_bytes == bytes[zero]);
    }
  }
}

TEST_CASE("predict: pipeline stages share the model, tp halves the blocks' matrices", "[rank_prediction]") {
  PredictSpec s = spec(2);
  s.pp = 2;
  const LayoutPrediction p = predict_layout(s, StepRates{});
  REQUIRE(p.ranks.size() == 2);
  CHECK(p.ranks[0].params + p.ranks[1].params == psi(4, 64, 256, 32));
  // One activation message b·s·h·4 bytes per micro-batch each way: stage 0 sends forward, stage 1 backward.
  CHECK(p.ranks[0].pp_bytes == 4 * 2 * 32 * 64 * 4);
  CHECK(p.ranks[1].pp_bytes == 4 * 2 * 32 * 64 * 4);
  PredictSpec t = spec(2);
  t.tp = 2;
  const LayoutPrediction q = predict_layout(t, StepRates{});
  CHECK(q.ranks[0].params < psi(4, 64, 256, 32));
  CHECK(q.ranks[0].params > psi(4, 64, 256, 32) / 2);
  CHECK(q.ranks[0].tp_bytes > 0);
}

TEST_CASE("predict: the step is the sum of its terms at the given rates", "[rank_prediction]") {
  StepRates r;
  r.gpu_flops = 1e10, r.intra_bytes_per_s = 1e9, r.latency_s = 1e-6, r.update_s_per_param = 2e-9;
  PredictSpec s = spec(2);
  s.pp = 2;
  const LayoutPrediction p = predict_layout(s, r);
  REQUIRE(p.ranks.size() == 2);
  // Per token: a block 6·12h² + 12·s·h, the head 6·h·V on the last stage alone; 8 · 32 tokens, 2 blocks a stage.
  const double tokens = 8 * 32, block = 6.0 * 12 * 64 * 64 + 12.0 * 32 * 64, head = 6.0 * 64 * 256;
  const RankPrediction &first = p.ranks[0], &last = p.ranks[1];
  CHECK(first.flops == Approx(tokens * 2 * block));
  CHECK(last.flops == Approx(tokens * (2 * block + head)));
  for (const RankPrediction& k : p.ranks) {
    CHECK(k.compute == Approx(k.flops / 1e10));
    CHECK(k.updated_params == k.params);  // DP: every parameter of its stage
    CHECK(k.update_s == Approx(double(k.params) * 2e-9));
    CHECK(k.pp_s == Approx(double(k.pp_bytes) / 1e9 + k.pp_messages * 1e-6));
    // 1F1B at the slowest stage's pace, (m + p − 1)/m with m = 4: the last stage's compute × 5/4, less its own.
    CHECK(k.compute + k.bubble == Approx(last.compute * 5 / 4));
    CHECK(k.step() == Approx(k.compute + k.update_s + k.dp_s + k.tp_s + k.pp_s + k.cp_s + k.ep_s + k.bubble));
    CHECK(p.step_seconds >= k.step());
  }
  CHECK(first.bubble > last.bubble);  // the first stage also waits for the head's stage
}

TEST_CASE("predict: ZeRO divides the optimizer update, DP does not", "[rank_prediction]") {
  StepRates r;
  r.update_s_per_param = 1e-9;
  PredictSpec s = spec(2);
  const u64 all = psi(4, 64, 256, 32);
  for (int zero : {0, 1, 2, 3}) {
    s.zero = zero;
    const LayoutPrediction p = predict_layout(s, r);
    for (const RankPrediction& k : p.ranks) {
      CHECK(k.updated_params == (zero == 0 ? all : (all + 1) / 2));
      CHECK(k.update_s == Approx(double(k.updated_params) * 1e-9));
    }
  }
}

TEST_CASE("predict: ep 2 — the dense gradients' ring exactly, the all-to-alls at an even load", "[rank_prediction]") {
  StepRates r;
  r.gpu_flops = 1e10, r.intra_bytes_per_s = 1e9, r.latency_s = 1e-6;
  PredictSpec s = spec(2);  // b 2 on each of the 2 ep ranks: 2 micro-batches per step
  s.experts = 4, s.top_k = 2, s.ep = 2;
  const u64 h = 64, E = 4, k = 2, sb = 32 * 2;
  // Dense: the GPT without its MLPs, plus each block's router (E·h, no bias).
  const u64 dense = psi(4, h, 256, 32) - 4 * (8 * h * h + 5 * h) + 4 * E * h;
  const LayoutPrediction p = predict_layout(s, r);
  REQUIRE(p.ranks.size() == 2);
  for (const RankPrediction& q : p.ranks) {
    CHECK(q.dp_known);
    CHECK(q.dp_bytes == dense * 4);  // one all-reduce over dp·ep = 2 of 4-byte gradients: each sends half, twice
    CHECK(q.ep_grad_bytes == 0);     // plain DP: no ZeRO shard to all-reduce over ep
    CHECK(q.ep_even);
    CHECK_FALSE(q.activations_known);
    CHECK(q.activations_even);
    // Per MoE block and micro-batch: counts (e − 1)·E/e int32s; dispatch and combine forward and backward, each
    // s·b·k·(e − 1)/e rows of h f32s.
    const u64 per_block = (E / 2) * 4 + 4 * (sb * k / 2) * h * 4;
    CHECK(q.ep_all_to_all_bytes == 4 * 2 * per_block);
    CHECK(q.ep_s == Approx(double(q.ep_all_to_all_bytes) / 1e9 + q.ep_messages * 1e-6));
    CHECK(q.ep_messages == Approx(4 * 2 * 5));  // 5 calls per block and micro-batch, 1 message each at e = 2
  }
  s.zero = 1;  // ZeRO with experts: the dp rings over dp = 1 send nothing; the dense shard all-reduces over ep
  const LayoutPrediction z = predict_layout(s, r);
  for (const RankPrediction& q : z.ranks) {
    CHECK(q.dp_bytes == 0);
    CHECK(q.ep_grad_bytes > 0);
    CHECK(q.ep_grad_bytes <= dense * 4 + 64);  // the dense part of a padded shard layout, over 2 ranks
  }
}

TEST_CASE("predict: a batch or a grid the trainer refuses throws one sentence", "[rank_prediction]") {
  PredictSpec s = spec(3);  // dp 3 does not split 8 samples
  CHECK_THROWS_AS(predict_layout(s, StepRates{}), std::runtime_error);
  PredictSpec t = spec(2);
  t.tp = 4;  // 4 ranks of tp in a world of 2
  CHECK_THROWS_AS(predict_layout(t, StepRates{}), std::runtime_error);
}
