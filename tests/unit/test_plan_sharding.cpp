// tests/unit/test_plan_sharding.cpp — DP / ZeRO / FSDP accounting out of plan/ (claims C8, C11–C16):
// the chapter's per-rank numbers, padding, the ring's per-member byte rule (against a step-by-step
// simulation of the ring), hybrid's intra/inter-node split, the `plan --dp` output, and `plan --ledger`
// on hand-written sharded multi-rank ledgers, passing when exact and failing one byte off.
// Expected values are written out by hand, not taken from the code under test.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "check/ledger_check.h"
#include "cli/command.h"
#include "plan/comm_volume.h"
#include "plan/sharding.h"
#include "report/plan_report.h"

using namespace shardlab;
using namespace shardlab::plan;

namespace {

using u64 = std::uint64_t;
constexpr u64 kGB = 1000000000ULL;  // the chapter's 1 GB = 1e9 bytes
constexpr u64 k7B = 7000000000ULL;

struct Ran {
  int rc;
  std::string out, err;
};
Ran run_plan(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int rc = plan_run(args, out, err);
  return {rc, out.str(), err.str()};
}
bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

Layout layout(Strategy s, u64 n, u64 k = 0, u64 a = 1) {
  Layout l;
  l.strategy = s;
  l.dp = n;
  l.ranks_per_node = k;
  l.accum = a;
  return l;
}

Recipe pure_f32() {
  Recipe r;
  r.mixed = Mixed::none;
  return r;
}

// The ring, step by step, counting elements each member sends — independent of the closed form.
// Reduce-scatter: in step k = 0..n-2 member r sends chunk (r-k-1) mod n. All-gather: chunk (r-k) mod n.
std::vector<u64> simulate_ring(RingOp op, const std::vector<u64>& counts) {
  const int n = static_cast<int>(counts.size());
  std::vector<u64> sent(counts.size(), 0);
  auto phase = [&](int shift) {
    for (int k = 0; k < n - 1; ++k)
      for (int r = 0; r < n; ++r) sent[r] += counts[((r - k - shift) % n + n) % n];
  };
  if (op != RingOp::all_gather) phase(1);
  if (op != RingOp::reduce_scatter) phase(0);
  return sent;
}

// A 2-rank ZeRO-2 ledger: Ψ = 11, N = 2 → S = 6, Ψ_pad = 12; bf16 params (2 B), fp32-accumulated
// grads (4 B), fp32 master/m/v; A = 2 micro-batches, 3 steps, one node of 2 ranks.
// By hand, per rank: param 2·12 = 24, grad 4·6 = 24, master/adam_m/adam_v 4·6 = 24 each.
// Per step: reduce-scatter A·(N-1)·S·4 = 2·1·6·4 = 48 B, all-gather (N-1)·S·2 = 12 B → over 3 steps
// 144 B and 36 B, all intra-node. Left out by the check: the loss's all_gather_value, a scalar
// all-reduce through MPI (e.g. a gradient norm), and a broadcast on the world axis.
std::string zero2_ledger(u64 rank1_grad = 24, u64 rank1_rs_sent = 144, const std::string& comm = "ring") {
  auto rank = [&](int r, u64 grad, u64 rs) {
    return R"({"rank": )" + std::to_string(r) + R"(,
          "memory": {"param": {"current": 24, "peak": 24}, "grad": {"current": )" +
           std::to_string(grad) +
           R"(, "peak": 48},
                     "master": {"current": 24, "peak": 24}, "adam_m": {"current": 24, "peak": 24},
                     "adam_v": {"current": 24, "peak": 24}, "momentum": {"current": 0, "peak": 0},
                     "activation": {"current": 0, "peak": 4096}, "comm_buffer": {"current": 0, "peak": 96}},
          "comm": {"totals": [
            {"op": "reduce_scatter", "axis": "dp", "impl": ")" +
           comm + R"(", "calls": 6, "elements": 72,
             "sent_intra": )" +
           std::to_string(rs) + R"(, "sent_inter": 0, "recv_intra": 144, "recv_inter": 0},
            {"op": "all_gather", "axis": "dp", "impl": ")" +
           comm + R"(", "calls": 3, "elements": 36,
             "sent_intra": 36, "sent_inter": 0, "recv_intra": 36, "recv_inter": 0},
            {"op": "all_gather_value", "axis": "dp", "impl": "ring", "calls": 3, "elements": 6,
             "sent_intra": 12, "sent_inter": 0, "recv_intra": 12, "recv_inter": 0},
            {"op": "all_reduce", "axis": "dp", "impl": "mpi", "calls": 3, "elements": 3,
             "sent_intra": 12, "sent_inter": 0, "recv_intra": 12, "recv_inter": 0},
            {"op": "broadcast", "axis": "world", "impl": "mpi", "calls": 1, "elements": 12,
             "sent_intra": 24, "sent_inter": 0, "recv_intra": 0, "recv_inter": 0}],
           "calls": []}})";
  };
  return R"({"world_size": 2,
  "model": {"params": 11, "dtype": "f32", "mixed": "bf16", "optimizer": "adamw",
            "grad_accum_dtype": "fp32", "master": "fp32", "momentum": 0.9},
  "layout": {"dp": 2, "strategy": "zero2", "shard_group": 2, "ranks_per_node": 2, "padded_params": 12,
             "shard": 6, "accum": 2, "steps": 3, "comm": ")" +
         comm + R"("},
  "ranks": [ )" +
         rank(1, rank1_grad, rank1_rs_sent) + ",\n" + rank(0, 24, 144) + "]}";
}

// A 4-rank FSDP hybrid ledger: Ψ = 10, N = 4, K = 2 → G = 2, S = 5, Ψ_pad = 10, M = 2; C1 recipe.
// Per rank: every category sharded: 2·5 + 2·5 + 4·5·3 = 80 B. Per step (A = 1), inside the node:
// two all-gathers and a reduce-scatter of (K-1)·S = 5 elements · 2 B = 30 B intra; across nodes the
// 5-element grad shard in chunks {3, 2}: (5-3) + (5-2) = 5 elements · 2 B = 10 B inter. 2 steps.
std::string hybrid_ledger(u64 rank2_inter_sent = 20, u64 rank2_intra_ar = 0) {
  std::string ranks;
  for (int r = 0; r < 4; ++r) {
    const u64 inter = r == 2 ? rank2_inter_sent : 20, ar_intra = r == 2 ? rank2_intra_ar : 0;
    ranks += std::string(r ? ",\n" : "") + R"({"rank": )" + std::to_string(r) + R"(, "memory": {
            "param": {"current": 10, "peak": 20}, "grad": {"current": 10, "peak": 20},
            "master": {"current": 20, "peak": 20}, "adam_m": {"current": 20, "peak": 20},
            "adam_v": {"current": 20, "peak": 20}},
          "comm": {"totals": [
            {"op": "all_gather", "axis": "dp", "impl": "ring", "calls": 4, "elements": 40,
             "sent_intra": 40, "sent_inter": 0, "recv_intra": 40, "recv_inter": 0},
            {"op": "reduce_scatter", "axis": "dp", "impl": "ring", "calls": 2, "elements": 20,
             "sent_intra": 20, "sent_inter": 0, "recv_intra": 20, "recv_inter": 0},
            {"op": "all_reduce", "axis": "dp", "impl": "ring", "calls": 2, "elements": 10,
             "sent_intra": )" +
             std::to_string(ar_intra) + R"(, "sent_inter": )" + std::to_string(inter) + R"(,
             "recv_intra": 0, "recv_inter": 20}]}})";
  }
  return R"({"world_size": 4,
  "model": {"params": 10, "dtype": "f32", "mixed": "bf16", "optimizer": "adamw",
            "grad_accum_dtype": "bf16", "master": "fp32", "momentum": 0.9},
  "layout": {"dp": 4, "strategy": "hybrid", "shard_group": 2, "ranks_per_node": 2, "padded_params": 10,
             "shard": 5, "accum": 1, "steps": 2, "comm": "ring"},
  "ranks": [)" +
         ranks + "]}";
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("shardlab_test_plan_sharding_" + std::to_string(getpid()) + "_" + name))
                               .string();
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("C12, C13: 7B per rank at N = 8 is 38.5 / 26.25 / 14 GB; ZeRO-3 at N = 64 is 1.75 GB", "[plan]") {
  const Recipe r;  // the chapter's 16 B/param recipe
  CHECK(per_rank_model_state_bytes(r, k7B, layout(Strategy::dp, 8)).total() == 112 * kGB);  // C11
  CHECK(per_rank_model_state_bytes(r, k7B, layout(Strategy::zero1, 8)).total() == 38500000000ULL);
  CHECK(per_rank_model_state_bytes(r, k7B, layout(Strategy::zero2, 8)).total() == 26250000000ULL);
  CHECK(per_rank_model_state_bytes(r, k7B, layout(Strategy::zero3, 8)).total() == 14 * kGB);
  CHECK(per_rank_model_state_bytes(r, k7B, layout(Strategy::zero3, 64)).total() == 1750000000ULL);
  // ZeRO-1: 4Ψ + 12Ψ/N — param 14 GB and grad 14 GB whole, the 12 optimizer bytes in eighths.
  const PerCategory z1 = per_rank_model_state_bytes(r, k7B, layout(Strategy::zero1, 8));
  CHECK(z1[Mem::param] == 14 * kGB);
  CHECK(z1[Mem::grad] == 14 * kGB);
  CHECK(z1[Mem::master] == 3500000000ULL);
  // Floors as N → ∞: 28 GB, 14 GB, 0; DP stays 112 GB.
  CHECK(model_state_floor_bytes(r, k7B, Strategy::zero1).total() == 28 * kGB);
  CHECK(model_state_floor_bytes(r, k7B, Strategy::zero2).total() == 14 * kGB);
  CHECK(model_state_floor_bytes(r, k7B, Strategy::zero3).total() == 0);
  CHECK(model_state_floor_bytes(r, k7B, Strategy::dp).total() == 112 * kGB);
  CHECK(model_state_formula(r, Strategy::zero1) == "4Ψ + 12Ψ/N");
  CHECK(model_state_formula(r, Strategy::zero2) == "2Ψ + 14Ψ/N");
  CHECK(model_state_formula(r, Strategy::zero3) == "16Ψ/N");
  CHECK(model_state_formula(r, Strategy::dp) == "16Ψ");
  // FSDP names (C14): no_shard = DP, grad_op = ZeRO-2, full = ZeRO-3.
  Strategy s = Strategy::zero1;
  CHECK((parse_fsdp("no_shard", &s) && s == Strategy::dp));
  CHECK((parse_fsdp("grad_op", &s) && s == Strategy::zero2));
  CHECK((parse_fsdp("full", &s) && s == Strategy::zero3));
  CHECK((parse_zero_stage("1", &s) && s == Strategy::zero1));
  CHECK_FALSE(parse_zero_stage("4", &s));
}

TEST_CASE("C8, C12: DP all-reduce of 7B bf16 grads, 28 GB / 93 ms / 1.1 s; ZeRO-3 moves 1.5x DP", "[plan]") {
  const Recipe r;
  const StepComm dp = step_comm_bytes(r, k7B, layout(Strategy::dp, 8, 8), 0);
  CHECK(dp.all_reduce.intra == 24500000000ULL);  // 2(N-1)/N · 14 GB = 2·7·875e6·2
  CHECK(dp.all_reduce.inter == 0);
  CHECK(dp.total().total() == 24500000000ULL);
  // The chapter's ~28 GB is 2Ψ·2 B, the N → ∞ value, and its times come from that.
  const u64 chapter = 2 * k7B * 2;
  CHECK(chapter == 28 * kGB);
  CHECK(chapter / 300e9 == Approx(0.0933).margin(0.0005));  // 93 ms
  CHECK(chapter / 25e9 == Approx(1.12).margin(0.005));      // ~1.1 s
  CHECK(step_comm_seconds(r, k7B, layout(Strategy::dp, 8, 8), 300, 25) == Approx(24.5 / 300));
  CHECK(step_comm_seconds(r, k7B, layout(Strategy::dp, 16, 8), 300, 25) == Approx(2 * 15 * 437.5e6 * 2 / 25e9));
  // ZeRO-1/2: reduce-scatter + all-gather = DP's bytes; ZeRO-3: 3 phases = 1.5×.
  CHECK(step_comm_bytes(r, k7B, layout(Strategy::zero1, 8, 8), 0).total().total() == 24500000000ULL);
  CHECK(step_comm_bytes(r, k7B, layout(Strategy::zero2, 8, 8), 0).total().total() == 24500000000ULL);
  const StepComm z3 = step_comm_bytes(r, k7B, layout(Strategy::zero3, 8, 8), 0);
  CHECK(z3.all_gather.intra == 24500000000ULL);
  CHECK(z3.reduce_scatter.intra == 12250000000ULL);
  CHECK(z3.total().total() == 36750000000ULL);
  CHECK(2 * z3.total().total() == 3 * dp.total().total());
}

TEST_CASE("padding: Ψ = 10 on N = 4 gives S = 3, Ψ_pad = 12; per-rank bytes by hand", "[plan]") {
  const shardlab::ShardLayout sh = shard_layout(layout(Strategy::zero3, 4), 10);
  CHECK(sh.group == 4);
  CHECK(sh.shard() == 3);
  CHECK(sh.padded() == 12);
  CHECK(shard_layout(layout(Strategy::dp, 4), 10).padded() == 12);  // DP pads too when N > 1
  CHECK(shard_layout(layout(Strategy::dp, 1), 10).padded() == 10);  // N = 1: no padding
  CHECK(shard_layout(layout(Strategy::hybrid, 4, 2), 10).shard() == 5);
  const Recipe r;  // 2 / 2 / 4 / 4 / 4
  // DP: 16 · 12 = 192. ZeRO-1: param 2·12 + grad 2·12 + 12·3 = 84. ZeRO-2: 2·12 + 14·3 = 66.
  // ZeRO-3: 16·3 = 48. N = 1: 16·10 = 160.
  CHECK(per_rank_model_state_bytes(r, 10, layout(Strategy::dp, 4)).total() == 192);
  CHECK(per_rank_model_state_bytes(r, 10, layout(Strategy::zero1, 4)).total() == 84);
  CHECK(per_rank_model_state_bytes(r, 10, layout(Strategy::zero2, 4)).total() == 66);
  CHECK(per_rank_model_state_bytes(r, 10, layout(Strategy::zero3, 4)).total() == 48);
  CHECK(per_rank_model_state_bytes(r, 10, layout(Strategy::zero3, 1)).total() == 160);
  const PerCategory z2 = per_rank_model_state_bytes(r, 10, layout(Strategy::zero2, 4));
  CHECK(z2[Mem::param] == 24);
  CHECK(z2[Mem::grad] == 6);
  CHECK(z2[Mem::adam_v] == 12);
  // SGD+momentum in pure f32 under ZeRO-1: momentum is an optimizer state, so it is sharded.
  Recipe sgd = pure_f32();
  sgd.optimizer = Optimizer::sgd;
  const PerCategory s1 = per_rank_model_state_bytes(sgd, 10, layout(Strategy::zero1, 4));
  CHECK(s1[Mem::momentum] == 4 * 3);
  CHECK(s1.total() == 4 * 12 + 4 * 12 + 4 * 3);
  // Comm with padding, pure f32, ZeRO-1, N = 4: each phase (N-1)·S = 9 elements · 4 B.
  CHECK(step_comm_bytes(pure_f32(), 10, layout(Strategy::zero1, 4), 2).total().total() == 72);
}

TEST_CASE("C8: ring bytes per member with unequal chunks, by hand and by simulation", "[plan]") {
  const std::vector<u64> counts = {3, 1, 4, 2};  // Σ = 10
  // member 0: reduce-scatter 10 - 3 = 7, all-gather 10 - counts[1] = 9; member 3: 10 - 2 = 8, 10 - 3 = 7.
  CHECK(ring_sent_elements(RingOp::reduce_scatter, counts, 0) == 7);
  CHECK(ring_sent_elements(RingOp::all_gather, counts, 0) == 9);
  CHECK(ring_sent_elements(RingOp::all_reduce, counts, 0) == 16);
  CHECK(ring_sent_elements(RingOp::reduce_scatter, counts, 3) == 8);
  CHECK(ring_sent_elements(RingOp::all_gather, counts, 3) == 7);
  CHECK(ring_sent_elements(RingOp::all_gather, counts, 2) == 8);  // 10 - counts[3]
  for (RingOp op : {RingOp::reduce_scatter, RingOp::all_gather, RingOp::all_reduce})
    for (const std::vector<u64>& c : std::vector<std::vector<u64>>{counts, {5}, {2, 7}, {4, 0, 9, 1, 1, 3}}) {
      const std::vector<u64> sim = simulate_ring(op, c);
      for (size_t m = 0; m < c.size(); ++m) CHECK(ring_sent_elements(op, c, m) == sim[m]);
    }
  // Even chunking: the first total mod members chunks are one larger.
  CHECK(even_chunks(5, 2) == std::vector<u64>{3, 2});
  CHECK(even_chunks(10, 4) == std::vector<u64>{3, 3, 2, 2});
  CHECK(even_chunks(2, 3) == std::vector<u64>{1, 1, 0});
}

TEST_CASE("comm per step: gradient accumulation multiplies ZeRO-2/3 but not DP/ZeRO-1", "[plan]") {
  const Recipe r;  // bf16 params and grads
  // Ψ = 10, N = 4, S = 3, A = 3: one ring phase = (N-1)·S·2 B = 18 B.
  CHECK(step_comm_bytes(r, 10, layout(Strategy::dp, 4, 0, 3), 0).total().total() == 36);
  CHECK(step_comm_bytes(r, 10, layout(Strategy::zero1, 4, 0, 3), 0).total().total() == 36);
  CHECK(step_comm_bytes(r, 10, layout(Strategy::zero2, 4, 0, 3), 0).reduce_scatter.total() == 54);
  CHECK(step_comm_bytes(r, 10, layout(Strategy::zero2, 4, 0, 3), 0).all_gather.total() == 18);
  CHECK(step_comm_bytes(r, 10, layout(Strategy::zero3, 4, 0, 3), 0).all_gather.total() == 108);
  CHECK(step_comm_bytes(r, 10, layout(Strategy::zero3, 4, 0, 3), 0).reduce_scatter.total() == 54);
  // fp32 grad accumulation: gradients travel as 4-byte elements, params as 2.
  Recipe a32;
  a32.grad_accum = GradAccum::fp32;
  const StepComm z1 = step_comm_bytes(a32, 10, layout(Strategy::zero1, 4), 0);
  CHECK(z1.reduce_scatter.total() == 9 * 4);
  CHECK(z1.all_gather.total() == 9 * 2);
  CHECK(step_comm_bytes(a32, 10, layout(Strategy::dp, 4), 0).all_reduce.total() == 18 * 4);
  CHECK(step_comm_bytes(r, 10, layout(Strategy::zero3, 1), 0).total().total() == 0);  // N = 1
}

TEST_CASE("intra/inter split: DP ring over 2-rank nodes and FSDP hybrid N = 4, K = 2", "[plan]") {
  const Recipe r;
  // DP, Ψ = 10, N = 4, K = 2 (nodes {0,1}, {2,3}): ranks 1 → 2 and 3 → 0 cross nodes; 2·3·3·2 = 36 B each.
  for (u64 k = 0; k < 4; ++k) {
    const LinkBytes b = step_comm_bytes(r, 10, layout(Strategy::dp, 4, 2), k).total();
    CHECK(b.intra == (k % 2 == 0 ? 36u : 0u));
    CHECK(b.inter == (k % 2 == 1 ? 36u : 0u));
  }
  // Hybrid, Ψ = 10, N = 4, K = 2: G = 2, S = 5, M = 2. Intra: 2 all-gathers + 1 reduce-scatter of
  // (K-1)·S = 5 elements · 2 B = 30 B. Inter: chunks {3, 2}, (5-3) + (5-2) = 5 elements · 2 B = 10 B.
  for (u64 k = 0; k < 4; ++k) {
    const StepComm c = step_comm_bytes(r, 10, layout(Strategy::hybrid, 4, 2), k);
    CHECK(c.all_gather.intra == 20);
    CHECK(c.reduce_scatter.intra == 10);
    CHECK(c.all_reduce.intra == 0);
    CHECK(c.all_reduce.inter == 10);
    CHECK(c.total().intra == 30);
    CHECK(c.total().inter == 10);
  }
  // Hybrid with A = 2: the node-local ZeRO-3 part doubles, the cross-node all-reduce does not.
  CHECK(step_comm_bytes(r, 10, layout(Strategy::hybrid, 4, 2, 2), 0).total().intra == 60);
  CHECK(step_comm_bytes(r, 10, layout(Strategy::hybrid, 4, 2, 2), 0).total().inter == 10);
  // Unequal outer chunks: N = 6, K = 2, M = 3, S = 5 in chunks {2, 2, 1}: node 0 sends (5-2) + (5-2) = 6,
  // node 1 (5-2) + (5-1) = 7, node 2 (5-1) + (5-2) = 7 elements · 2 B.
  CHECK(step_comm_bytes(r, 10, layout(Strategy::hybrid, 6, 2), 1).all_reduce.inter == 12);
  CHECK(step_comm_bytes(r, 10, layout(Strategy::hybrid, 6, 2), 2).all_reduce.inter == 14);
  CHECK(step_comm_bytes(r, 10, layout(Strategy::hybrid, 6, 2), 5).all_reduce.inter == 14);
  // K = N: one node, nothing crosses.
  CHECK(step_comm_bytes(r, 10, layout(Strategy::hybrid, 4, 4), 3).total().inter == 0);
  CHECK(layout_error(layout(Strategy::hybrid, 6, 4)) != "");
  CHECK(layout_error(layout(Strategy::hybrid, 6, 0)) != "");
  CHECK(layout_error(layout(Strategy::zero3, 6, 4)) != "");  // nodes of unequal size are refused for every strategy
}

TEST_CASE("plan --dp prints the chapter's per-rank numbers, ring bytes and times", "[plan][cli]") {
  const Ran z3 = run_plan({"--preset", "7b", "--dp", "8", "--zero", "3"});
  REQUIRE(z3.rc == 0);
  for (const char* s :
       {"38.500 GB", "26.250 GB", "14.000 GB", "112.000 GB", "4Ψ + 12Ψ/N", "2Ψ + 14Ψ/N", "16Ψ/N", "24.500 GB",
        "28.000 GB", "93.3 ms", "1.12 s", "81.7 ms", "36.750 GB", "1.50", "→ 0", "claim C16", "875,000,000"})
    CHECK(contains(z3.out, s));
  CHECK(contains(z3.out, "Model states (claim C1)"));  // the single-GPU tables stay
  for (const char* z : {"1", "2"}) {
    const Ran r = run_plan({"--preset", "7b", "--dp", "8", "--zero", z});
    CHECK(r.rc == 0);
    CHECK(contains(r.out, std::string("* ZeRO-") + z));
  }
  const Ran z64 = run_plan({"--preset", "7b", "--dp", "64", "--zero", "3"});
  CHECK(z64.rc == 0);
  CHECK(contains(z64.out, "1.750 GB"));
  CHECK(contains(z64.out, "→ 8 nodes"));
  const Ran fsdp = run_plan({"--preset", "7b", "--dp", "16", "--fsdp", "hybrid"});
  CHECK(fsdp.rc == 0);
  CHECK(contains(fsdp.out, "* FSDP hybrid, K = 8"));
  const Ran none = run_plan({"--preset", "7b"});
  CHECK_FALSE(contains(none.out, "Data parallel"));  // the section only with --dp
}

TEST_CASE("plan --dp rejects bad input with one message and exit 2", "[plan][cli]") {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"--zero", "3"},
                                             {"--dp", "0"},
                                             {"--dp", "8", "--zero", "4"},
                                             {"--dp", "8", "--fsdp", "shard"},
                                             {"--dp", "8", "--zero", "3", "--fsdp", "full"},
                                             {"--dp", "8", "--fsdp", "hybrid"},
                                             {"--preset", "7b", "--dp", "12", "--fsdp", "hybrid"},
                                             {"--dp", "4", "--accum", "0"},
                                             {"--dp", "4", "--intra-gbps", "-1"},
                                             {"--ranks-per-node", "8"},
                                             {"--ledger", "x.json", "--dp", "2"}}) {
    const Ran r = run_plan(args);
    CHECK(r.rc == 2);
    CHECK(!r.err.empty());
    CHECK(r.out.empty());
  }
}

TEST_CASE("ledger check: 2-rank ZeRO-2 ledger passes exactly, fails one byte off", "[plan][ledger]") {
  const LedgerCheck good = check_ledger_text(zero2_ledger());
  REQUIRE(good.sharded);
  CHECK(good.comm_checked);
  CHECK(good.ranks.size() == 2);
  CHECK(good.sharding.shard() == 6);
  CHECK(good.sharding.padded() == 12);
  CHECK(good.ranks[1].comm.formula.reduce_scatter.intra == 48);
  CHECK(good.ranks[1].comm.measured.reduce_scatter.intra == 144);
  CHECK(good.ranks[1].comm.measured.all_gather.intra == 36);  // all_gather_value left out
  CHECK(good.ok());

  const LedgerCheck state_off = check_ledger_text(zero2_ledger(25));
  CHECK_FALSE(state_off.ok());
  CHECK_FALSE(state_off.ranks[1].states[static_cast<int>(Mem::grad)].match);
  CHECK(state_off.ranks[0].states[static_cast<int>(Mem::grad)].match);
  CHECK(state_off.ranks[1].comm.match);

  const LedgerCheck comm_off = check_ledger_text(zero2_ledger(24, 145));
  CHECK_FALSE(comm_off.ok());
  CHECK_FALSE(comm_off.ranks[1].comm.match);
  CHECK(comm_off.ranks[0].comm.match);

  // impl "mpi": the byte check is skipped with a note, model states still checked.
  const LedgerCheck mpi = check_ledger_text(zero2_ledger(24, 999, "mpi"));
  CHECK_FALSE(mpi.comm_checked);
  CHECK(mpi.ok());
  CHECK_FALSE(check_ledger_text(zero2_ledger(23, 999, "mpi")).ok());

  // A layout field that disagrees with the formula fails; a missing rank or world_size ≠ dp is bad input.
  std::string wrong_shard = zero2_ledger();
  wrong_shard.replace(wrong_shard.find("\"shard\": 6"), 10, "\"shard\": 5");
  CHECK_FALSE(check_ledger_text(wrong_shard).ok());
  std::string wrong_world = zero2_ledger();
  wrong_world.replace(wrong_world.find("\"world_size\": 2"), 15, "\"world_size\": 4");
  CHECK_THROWS(check_ledger_text(wrong_world));
  std::string no_rank1 = zero2_ledger();
  no_rank1.replace(no_rank1.find("\"rank\": 1"), 9, "\"rank\": 0");
  CHECK_THROWS(check_ledger_text(no_rank1));

  const std::string good_path = write_temp("good.json", zero2_ledger());
  const std::string off_path = write_temp("off.json", zero2_ledger(24, 145));
  const std::string mpi_path = write_temp("mpi.json", zero2_ledger(24, 0, "mpi"));
  const Ran g = run_plan({"--ledger", good_path});
  CHECK(g.rc == 0);
  CHECK(contains(g.out, "every rank, category and ring total matches exactly"));
  const Ran o = run_plan({"--ledger", off_path});
  CHECK(o.rc == 1);
  CHECK(contains(o.out, "MISMATCH in rank 1 comm"));
  CHECK(contains(o.out, "48.33"));  // 145 B over 3 steps
  const Ran m = run_plan({"--ledger", mpi_path});
  CHECK(m.rc == 0);
  CHECK(contains(m.out, "not checked"));
  for (const std::string& p : {good_path, off_path, mpi_path}) std::remove(p.c_str());
}

TEST_CASE("ledger check: 4-rank FSDP hybrid, intra and inter bytes checked separately", "[plan][ledger]") {
  const LedgerCheck good = check_ledger_text(hybrid_ledger());
  CHECK(good.ranks.size() == 4);
  CHECK(good.ranks[3].comm.split);
  CHECK(good.ranks[3].comm.formula.total().intra == 30);
  CHECK(good.ranks[3].comm.formula.total().inter == 10);
  CHECK(good.ok());
  CHECK_FALSE(check_ledger_text(hybrid_ledger(21)).ok());     // one byte more inter on rank 2
  CHECK_FALSE(check_ledger_text(hybrid_ledger(0, 20)).ok());  // right total, wrong link kind
  const std::string path = write_temp("hybrid.json", hybrid_ledger());
  const Ran r = run_plan({"--ledger", path});
  CHECK(r.rc == 0);
  CHECK(contains(r.out, "FSDP hybrid over N = 4"));
  std::remove(path.c_str());
}
