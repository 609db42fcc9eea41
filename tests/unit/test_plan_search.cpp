// tests/unit/test_plan_search.cpp — `plan --search`'s pieces: the enumeration of layouts against a brute-force count
// written here from the trainer's rules, the memory of one 3D layout and the step-time terms against hand-written
// formulas (the chapter's numbers), and the ranking's order and memory filter.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "plan/layout_search.h"
#include "plan/rank_prediction.h"
#include "plan/search_ranking.h"
#include "plan/step_time.h"
#include "plan/tp_bytes.h"

using namespace shardlab;
using namespace shardlab::plan;

namespace {
using u64 = std::uint64_t;

SearchModel tiny(u64 experts = 0) { return SearchModel{"gpt", 0, 32, 4, 4, 32, 256, experts, false}; }
SearchModel seven_b() { return SearchModel{"7b", 7000000000ULL, 4096, 32, 32, 2048, 0, 0, true}; }
SearchModel seventy_b() { return SearchModel{"70b", 70000000000ULL, 8192, 80, 64, 2048, 0, 0, true}; }

struct Counts {
  u64 enumerated = 0, valid = 0;
};

// Every (dp, tp, SP, pp, cp, ep, zero, b, recompute, kernel) by nested loops over 1..N, kept when the product is N
// and the rules hold: heads % tp, K % tp, pp ≤ layers, cp: s % 2c and flash, ep | E (1 without experts), no cp with
// experts, SP only enumerated with tp > 1 and kept with (s/c) % tp = 0 and no experts, B % (dp·ep·b).
Counts brute_force(u64 N, u64 B, u64 K, u64 heads, u64 layers, u64 seq, u64 experts) {
  Counts c;
  for (u64 dp = 1; dp <= N; ++dp)
    for (u64 tp = 1; tp <= N; ++tp)
      for (u64 pp = 1; pp <= N; ++pp)
        for (u64 cp = 1; cp <= N; ++cp)
          for (u64 ep = 1; ep <= N; ++ep) {
            if (dp * tp * pp * cp * ep != N || (ep > 1 && experts == 0)) continue;
            for (int sp = 0; sp < (tp > 1 ? 2 : 1); ++sp)
              for (int zero = 0; zero < 4; ++zero)
                for (u64 b = 1; b <= B; ++b) {
                  if (B % b != 0) continue;
                  for (int recompute = 0; recompute < 3; ++recompute)
                    for (int flash = 0; flash < 2; ++flash) {
                      ++c.enumerated;
                      const bool ok = heads % tp == 0 && std::min(K, N) % tp == 0 && pp <= layers &&
                                      (cp == 1 || (seq % (2 * cp) == 0 && flash)) && (ep == 1 || experts % ep == 0) &&
                                      !(experts > 0 && cp > 1) && B % (dp * ep * b) == 0 &&
                                      (!sp || ((seq / cp) % tp == 0 && experts == 0));
                      if (ok) ++c.valid;
                    }
                }
          }
  return c;
}
}  // namespace

TEST_CASE("search: the enumeration counts what a brute force over the trainer's rules counts", "[plan][search]") {
  struct Case {
    u64 gpus, batch, node, experts;
  };
  for (const Case k : {Case{8, 8, 4, 0}, Case{8, 12, 8, 0}, Case{16, 16, 8, 0}, Case{6, 6, 8, 0}, Case{8, 8, 8, 4}}) {
    const SearchModel m = tiny(k.experts);
    const SearchSpace space{k.gpus, k.batch, k.node};
    const Enumeration e = enumerate_layouts(m, space);
    const Counts want = brute_force(k.gpus, k.batch, k.node, m.heads, m.layers, m.seq, k.experts);
    INFO("N " << k.gpus << " B " << k.batch << " K " << k.node << " E " << k.experts);
    CHECK(e.enumerated == want.enumerated);
    CHECK(e.layouts.size() == want.valid);
    CHECK(e.enumerated - e.divisibility == want.valid);
    for (const SearchLayout& l : e.layouts) {
      CHECK(l.gpus() == k.gpus);
      CHECK(l.dp * l.ep * l.micro_batch * l.micro_batches == k.batch);
    }
  }
  // A hand count: N = 2 over a dense model, B = 2, K = 8: (dp, tp) ∈ {(2,1), (1,2)}, pp 2, cp 2 (flash only);
  // b ∈ {1, 2}. dp 2: only b 1 (2·2 does not divide 2) → 4 zero × 6 = 24; tp 2: 4 × 2 b × 6 = 48, and as many with
  // SP; pp 2: 48; cp 2: flash only, 4 × 2 × 3 = 24.
  const Enumeration two = enumerate_layouts(tiny(), SearchSpace{2, 2, 8});
  CHECK(two.enumerated == 5 * 4 * 2 * 6);
  CHECK(two.layouts.size() == 24 + 48 + 48 + 48 + 24);
}

TEST_CASE("search: memory of the chapter's 512-GPU 70B layout (C26)", "[plan][search]") {
  SearchLayout l;
  l.dp = 16, l.tp = 8, l.pp = 4, l.zero = 1, l.micro_batch = 1, l.micro_batches = 64;
  const SearchMemory mem = search_memory(seventy_b(), l);
  // Ψ/(T·P) = 70e9/32 = 2.1875e9; ZeRO-1 over 16: 4·2.1875e9 + 12·2.1875e9/16 = 8.75e9 + 1.640625e9.
  CHECK(mem.psi_slice == 2187500000ULL);
  CHECK(mem.model_states == 10390625000ULL);
  // Korthikanti's s·b·h·(10 + 24/t + 5·a·s/(h·t)) with s = 2048, h = 8192, a = 64, t = 8: 16,777,216 × 23.
  CHECK(mem.activation_per_layer == 16777216ULL * 23);
  CHECK(mem.in_flight == 4);  // 1F1B: min(p, m)
  CHECK(mem.activations == 16777216ULL * 23 * 20 * 4);
  l.attention = AttentionKernel::flash;  // no s² term: 16,777,216 × 13
  CHECK(search_memory(seventy_b(), l).activation_per_layer == 16777216ULL * 13);
  l.recompute = Recompute::full;  // layer inputs only: 2·s·b·h
  CHECK(search_memory(seventy_b(), l).activation_per_layer == 2 * 16777216ULL);
  l.recompute = Recompute::none, l.attention = AttentionKernel::naive, l.sequence_parallel = true;
  // SP: s·b·h·(34/t + 5·a·s/(h·t)) = 16,777,216 × (34 + 80)/8; the model states do not change.
  CHECK(search_memory(seventy_b(), l).activation_per_layer == 16777216ULL * (34 + 80) / 8);
  CHECK(search_memory(seventy_b(), l).model_states == 10390625000ULL);
}

TEST_CASE("search: SP sends 1.25× tp's bytes (the re-gathers), its pipeline messages s/t rows", "[plan][search]") {
  StepRates r;
  r.gpu_flops = 100e12, r.intra_bytes_per_s = 200e9, r.inter_bytes_per_s = 20e9, r.latency_s = 5e-6;
  SearchLayout l;
  l.dp = 16, l.tp = 8, l.pp = 4, l.zero = 1, l.micro_batch = 1, l.micro_batches = 64;
  const StepTime plain = step_time(seventy_b(), l, 1024, r);
  l.sequence_parallel = true;
  const StepTime sp = step_time(seventy_b(), l, 1024, r);
  // The trainer's own tp bytes formula (plan/tp_bytes.h, checked against its ledgers): SP over plain, 10 units to 8.
  TpShape t;
  t.gpt = GptDims{32000, 2048, 8192, 80};
  t.micro_batch = 1, t.accum = 64, t.tp = 8, t.act_bytes = 2, t.grad_bytes = 2;
  auto activations = [&t] {  // the regions' traffic and backward's re-gathers (not the head's, not the gradients')
    const TpStepBytes b = tp_step_bytes(tp_step_phases(t, 0, 0, 0));
    return double(b.region + b.regather);
  };
  const double formula_plain = activations();
  t.sequence_parallel = true;
  const double formula_sp = activations();
  CHECK(sp.tp_bytes / plain.tp_bytes == Approx(1.25));
  CHECK(sp.tp_bytes / plain.tp_bytes == Approx(formula_sp / formula_plain));
  const double calls = 4.0 * 20 * 64;  // 4 per layer, 20 layers a stage, 64 micro-batches
  CHECK(sp.tp == Approx(2.5 * calls * (5e-6 + 7.0 / 8 * 2048 * 8192 * 2 / 200e9)));  // b·s·h bf16, (t−1)/t
  CHECK(sp.pp_bytes == Approx(plain.pp_bytes / 8));
  CHECK(sp.compute == Approx(plain.compute));
  CHECK(search_layout_problem(seventy_b(), SearchSpace{512, 1024, 8}, l).empty());
  l.tp = 1, l.dp = 128;
  CHECK(!search_layout_problem(seventy_b(), SearchSpace{512, 1024, 8}, l).empty());  // SP needs tp ≥ 2
  SearchModel odd = seventy_b();  // s = 24: cp 4 leaves 6 tokens a rank, which tp 4 does not divide (tp 2 does)
  odd.seq = 24;
  SearchLayout c;
  c.dp = 1, c.tp = 4, c.cp = 4, c.pp = 1, c.sequence_parallel = true, c.attention = AttentionKernel::flash;
  c.micro_batch = 1;
  CHECK(!search_layout_problem(odd, SearchSpace{16, 8, 16}, c).empty());
  c.tp = 2, c.dp = 2;
  CHECK(search_layout_problem(odd, SearchSpace{16, 8, 16}, c).empty());
}

TEST_CASE("search: the time model's pieces", "[plan][search]") {
  CHECK(ring_seconds(true, 4, 4e9, 1e9, 0) == Approx(6.0));   // 2·3/4·4 GB at 1 GB/s
  CHECK(ring_seconds(false, 4, 4e9, 1e9, 0) == Approx(3.0));  // 3/4·4 GB
  CHECK(ring_seconds(true, 4, 4e9, 1e9, 0.5) == Approx(6.5));
  CHECK(ring_seconds(true, 1, 4e9, 1e9, 0.5) == 0);
  CHECK(inside_node(8, 8, 64));
  CHECK(!inside_node(16, 8, 64));
  CHECK(inside_node(4, 8, 4));

  const SearchModel m = seven_b();
  const double tokens = 1024.0 * 2048, attn = 12.0 * 32 * 2048 * 4096, core = 4.0 * 32 * 2048 * 4096;
  SearchLayout dp64;
  dp64.dp = 64, dp64.micro_batch = 1, dp64.micro_batches = 16;
  CHECK(step_flops_per_gpu(m, dp64, 1024).base == Approx(tokens * (6 * 7e9 + attn) / 64));
  CHECK(step_flops_per_gpu(m, dp64, 1024).recompute == 0);
  dp64.recompute = Recompute::full;  // one more forward: 2Ψ + the core's forward (C27: +1/3 of 6Ψ)
  CHECK(step_flops_per_gpu(m, dp64, 1024).recompute == Approx(tokens * (2 * 7e9 + core) / 64));
  dp64.recompute = Recompute::selective;
  CHECK(step_flops_per_gpu(m, dp64, 1024).recompute == Approx(tokens * core / 64));

  // tp 8 × pp 4 × dp 2 on 64 GPUs, 8 per node: every term by hand.
  StepRates r;
  r.gpu_flops = 100e12, r.intra_bytes_per_s = 200e9, r.inter_bytes_per_s = 20e9, r.latency_s = 5e-6;
  SearchLayout l;
  l.dp = 2, l.tp = 8, l.pp = 4, l.zero = 0, l.micro_batch = 2, l.micro_batches = 256;  // 2·2·256 = 1024
  const StepTime t = step_time(m, l, 1024, r);
  const double flops = tokens * (6 * 7e9 + attn) / 64;  // 8 of 32 layers on each stage: 1/4 of 1/(dp·tp)
  CHECK(t.compute == Approx(flops / 100e12));
  const double msg = 2.0 * 2048 * 4096 * 2;  // b·s·h bf16
  CHECK(t.tp == Approx(4.0 * 8 * 256 * (5e-6 + 2.0 * 7 / 8 * msg / 200e9)));
  CHECK(!t.tp_inter);
  CHECK(t.pp_inter);
  CHECK(t.pp == Approx(2.0 * 3 * (5e-6 + msg / 20e9)));
  CHECK(t.bubble == Approx(3.0 / 256 * t.compute));
  CHECK(t.dp_inter);  // the dp group spans tp·dp = 16 GPUs: two nodes
  CHECK(t.cp == 0);
  CHECK(t.ep == 0);
  CHECK(t.update == Approx(7e9 / 32 * 15e-12));  // DP: its whole tp·pp slice, at the default 15 ps per parameter
  CHECK(t.step() == Approx(t.compute + t.update + t.dp + t.tp + t.pp + t.cp + t.ep + t.bubble));
  SearchLayout zero1 = l;  // ZeRO: its 1/dp shard of the slice
  zero1.zero = 1;
  CHECK(step_time(m, zero1, 1024, r).update == Approx(7e9 / 32 / 2 * 15e-12));

  // DP's all-reduce of Ψ/(T·P) bf16 gradients over 2 ranks: 2·(1/2)·Ψ_slice·2 bytes; it hides behind the last
  // micro-batch's backward except the last 25 MB bucket.
  const double slice = 7e9 / 32, sent = 2.0 * 1 / 2 * slice * 2;
  CHECK(t.dp_bytes == Approx(sent));
  CHECK(t.dp_total == Approx(5e-6 + sent / 20e9));
  const double window = (t.compute - flops / 3 / 100e12) / 256;
  CHECK(t.dp == Approx(std::max(5e-6 + 25e6 / 20e9, t.dp_total - window)));
  // A slow GPU hides it all but the last bucket; a fast one exposes what exceeds the window.
  r.gpu_flops = 1e12;
  CHECK(step_time(m, l, 1024, r).dp == Approx(5e-6 + 25e6 / 20e9));
  r.gpu_flops = 1e18;
  CHECK(step_time(m, l, 1024, r).dp > 0.9 * t.dp_total);
  // At dp 4 a member sends 2·(3/4) of each bucket it all-reduces: the exposed last bucket is 1.5 × 25 MB at β.
  SearchLayout l4 = l;
  l4.dp = 4, l4.micro_batches = 128;  // 4·2·128 = 1024
  r.gpu_flops = 1e12;
  CHECK(step_time(m, l4, 1024, r).dp == Approx(5e-6 + 1.5 * 25e6 / 20e9));
}

TEST_CASE("search: rows fit the memory and are sorted by step time", "[plan][search]") {
  const SearchModel m = seven_b();
  const SearchSpace space{64, 1024, 8};
  const SearchResult r = search_layouts(m, space, StepRates{}, 80e9);
  REQUIRE(!r.rows.empty());
  CHECK(r.counts.layouts.size() == r.rows.size() + r.over_memory);
  for (size_t i = 0; i < r.rows.size(); ++i) {
    CHECK(double(r.rows[i].memory.total()) <= 80e9);
    if (i) CHECK(r.rows[i - 1].time.step() <= r.rows[i].time.step());
  }
  REQUIRE(r.rule);
  // The rule of thumb: tp = 8 (divides 32 heads and the node), pp 1 (a replica of 112 GB / 8 = 14 GB fits), ZeRO-1.
  CHECK(r.rule->layout.tp == 8);
  CHECK(r.rule->layout.pp == 1);
  CHECK(r.rule->layout.dp == 8);
  CHECK(r.rule->layout.zero == 1);
  CHECK(r.rule_rank >= 1);
  CHECK(r.rows[r.rule_rank - 1].layout == r.rule->layout);
  // 70B on 512: 1120 GB / (T·P) must fit with its activations: the chapter's D16 × T8 × P4.
  const SearchResult big = search_layouts(seventy_b(), SearchSpace{512, 1024, 8}, StepRates{}, 80e9);
  REQUIRE(big.rule);
  CHECK(big.rule->layout.tp == 8);
  CHECK(big.rule->layout.pp == 4);
  CHECK(big.rule->layout.dp == 16);
}

// A MoE of the trainer's GPT: h 32, L 4, a 4, s 32, V 256, E 4 experts of F = 4h = 128 in every block, top-2.
namespace {
SearchModel tiny_moe() {
  SearchModel m = tiny(4);
  m.top_k = 2;
  m.psi = gpt_param_count(m.gpt());
  return m;
}
}  // namespace

TEST_CASE("search: a MoE layout's memory, ep and dp terms by hand (C25)", "[plan][search][moe]") {
  const u64 C = 32, F = 128, E = 4, k = 2, L = 4, V = 256, T = 32, s = 32, a = 4;
  const SearchModel m = tiny_moe();
  SearchLayout l;  // dp 2 × ep 2 on 4 GPUs, b 2 × m 2 (B = 16)
  l.dp = 2, l.ep = 2, l.zero = 0, l.micro_batch = 2, l.micro_batches = 2;
  const u64 b = 2;

  // Parameters of one rank: the dense tensors, the router (E·C) and E/ep = 2 experts of 2·C·F + F + C per block.
  const u64 expert = 2 * C * F + F + C;
  const u64 block = 4 * C * C + 3 * C + 5 * C + E * C + (E / 2) * expert;
  const u64 rank_params = V * C + T * C + L * block + 2 * C + C * V;
  const SearchMemory mem = search_memory(m, l);
  CHECK(mem.psi_slice == rank_params);
  CHECK(mem.psi_experts == L * (E / 2) * expert);
  CHECK(mem.model_states == 16 * rank_params);  // plain DP: 16 B/param, nothing sharded
  SearchLayout z1 = l;
  z1.zero = 1;  // ZeRO-1 over dp = 2 (the ranks holding the same experts), not dp·ep = 4
  CHECK(search_memory(m, z1).model_states == 4 * rank_params + 12 * rank_params / 2);

  // A MoE block's activations: the chapter's 34·s·b·h + 5·a·s²·b, less the MLP's 16·s·b·h, plus the router's and the
  // experts' items at 2 B (int32: 4 B) with R = s·b rows and n = m = R·k slots.
  const u64 sbh = s * b * C, R = s * b, n = R * k;
  const u64 router = R * E * 2 + R * 2 + R * k * 2 + 3 * R * k * 4 + (b * E + E + 1) * 4;
  const u64 experts = n * C * 2 + 2 * n * F * 2 + n * C * 2;
  const u64 per_block = 34 * sbh + 5 * a * s * s * b - 16 * sbh + router + experts;
  CHECK(mem.activation_per_layer == per_block);
  CHECK(mem.activations == L * per_block);
  SearchLayout full = l;
  full.recompute = Recompute::full;  // only the block's input
  CHECK(search_memory(m, full).activations == L * 2 * sbh);

  // ep: per MoE block and micro-batch 5 all-to-alls (counts, dispatch, combine; backward dispatch, combine); each
  // dispatch or combine sends s·b·k·h·2·(e−1)/e bytes, the counts (e−1)·(E/e)·4; the ep group (2 GPUs) in a node.
  StepRates r;
  r.gpu_flops = 1e12, r.intra_bytes_per_s = 2e9, r.inter_bytes_per_s = 1e8, r.latency_s = 3e-6, r.ranks_per_node = 8;
  const double a2a = double(s * b * k * C * 2) / 2, counts = 1.0 * (E / 2) * 4;
  const double ep_bytes = double(L * l.micro_batches) * (4 * a2a + counts);
  const StepTime t = step_time(m, l, 16, r);
  CHECK(t.ep_bytes == Approx(ep_bytes));
  CHECK(t.ep == Approx(double(L * l.micro_batches * 5) * 3e-6 + ep_bytes / 2e9));
  CHECK(!t.ep_inter);
  CHECK(t.step() == Approx(t.compute + t.update + t.dp + t.tp + t.pp + t.cp + t.ep + t.bubble));
  // Full recompute repeats the forward's three calls.
  const StepTime tf = step_time(m, full, 16, r);
  CHECK(tf.ep == Approx(double(L * 2 * 8) * 3e-6 + double(L * 2) * (6 * a2a + 2 * counts) / 2e9));
  // On nodes of 1 GPU the ep group spans nodes.
  r.ranks_per_node = 1;
  CHECK(step_time(m, l, 16, r).ep_inter);
  CHECK(step_time(m, l, 16, r).ep == Approx(double(L * l.micro_batches * 5) * 3e-6 + ep_bytes / 1e8));
  r.ranks_per_node = 8;

  // dp: plain DP all-reduces the dense gradients over dp·ep = 4 and the experts' over dp = 2 (2-byte gradients).
  const double dense = double(rank_params - L * (E / 2) * expert), mine = double(L * (E / 2) * expert);
  CHECK(t.dp_bytes == Approx(2.0 * 3 / 4 * dense * 2 + 2.0 * 1 / 2 * mine * 2));
  // ZeRO-1 reduce-scatters the gradients and all-gathers the parameters over dp = 2, then all-reduces over ep = 2 the
  // dense gradients of its shard of the flat buffer. In the trainer's order (embeddings; per block its LayerNorms, QKV,
  // W^O and router, then its experts; the final LN and the head) member 0's half [0, Ψ/2) ends inside block 1's
  // experts: it holds the embeddings and blocks 0 and 1's dense tensors — more than half the dense, and the most any
  // GPU sends.
  const u64 dense_block = 4 * C * C + 3 * C + 5 * C + E * C;
  const u64 half = rank_params / 2, block1_dense_end = V * C + T * C + block + dense_block;
  REQUIRE(block1_dense_end < half);
  REQUIRE(half < V * C + T * C + 2 * block);
  const double busier = double(V * C + T * C + 2 * dense_block);
  CHECK(busier > dense / 2);
  CHECK(step_time(m, z1, 16, r).dp_bytes == Approx(2 * (1.0 / 2 * double(rank_params) * 2) + busier * 2));
  // That all-reduce runs once after the last micro-batch: exposed whole however long backward is (a slow GPU hides
  // everything else but the last bucket).
  StepRates slow = r;
  slow.gpu_flops = 1e3;
  const double shard_seconds = 3e-6 + busier * 2 / 2e9;  // ring over 2: 2·(1/2) of its shard's dense, 2 B each
  // The parameters' all-gather (forward) and the gradients' reduce-scatter (backward) each expose their last bucket,
  // here all of their rank_params·2·(1/2) bytes; the dense shard's all-reduce comes on top, not as backward's last.
  const double ring_tail = 3e-6 + double(rank_params) / 2e9;
  CHECK(step_time(m, z1, 16, slow).dp == Approx(2 * ring_tail + shard_seconds));
  // Without ep the experts' term is zero.
  SearchLayout ep1 = l;
  ep1.dp = 4, ep1.ep = 1, ep1.micro_batches = 2;  // 4·2·2 = 16
  CHECK(step_time(m, ep1, 16, r).ep == 0);
  CHECK(step_time(m, ep1, 16, r).ep_bytes == 0);
}

TEST_CASE("search: a MoE's FLOPs count k experts and the router, whole on every tp rank", "[plan][search][moe]") {
  const double C = 32, F = 128, E = 4, k = 2, L = 4, V = 256, s = 32;
  const SearchModel m = tiny_moe();
  SearchLayout l;
  l.tp = 2, l.ep = 2, l.micro_batch = 1, l.micro_batches = 8;  // N = 4, B = 16
  const double moe = L * (E * C + k * 2 * C * F), split = L * 4 * C * C + C * V, tokens = 16 * s;
  const double want = tokens * ((6 * split + 12 * L * s * C) / (2 * 2) + 6 * moe / 2);
  CHECK(step_flops_per_gpu(m, l, 16).base == Approx(want));
  l.recompute = Recompute::full;
  CHECK(step_flops_per_gpu(m, l, 16).recompute == Approx(tokens * ((2 * split + 4 * L * s * C) / 4 + 2 * moe / 2)));
}

TEST_CASE("search: a MoE search lists ep > 1 within the memory, ep time exactly where ep > 1", "[plan][search][moe]") {
  const SearchModel m = tiny_moe();
  const SearchResult r = search_layouts(m, SearchSpace{8, 16, 8}, StepRates{}, 1e9);
  REQUIRE(!r.rows.empty());
  bool expert_parallel = false;
  for (const SearchRow& row : r.rows) {
    CHECK(double(row.memory.total()) <= 1e9);
    CHECK((row.time.ep > 0) == (row.layout.ep > 1));
    expert_parallel = expert_parallel || row.layout.ep > 1;
  }
  CHECK(expert_parallel);
}

// Every row of a search held to the single-layout formulas the trainer's runs are checked against: the model states
// and gradient bytes (dp's, and ZeRO's dense shard over ep with experts) of each row equal plan --predict's
// (plan/rank_prediction.h: the layout read through the ledger check's own readers, its gradient group from the grid's
// coordinates, its stages from the pipeline partition) on the GPU the row prices — the most loaded rank. A search that
// sharded the states over the wrong group, or priced a stage other than the largest, differs here. The search prices
// the chapter's recipe (mixed bf16, fp32 master): so does the prediction it is held to.
TEST_CASE("search: every row's model states and dp bytes are the single-layout formulas'", "[plan][search]") {
  struct Case {
    SearchModel model;
    SearchSpace space;
  };
  SearchModel moe = tiny(4);
  moe.top_k = 2;
  const Case cases[] = {{tiny(), {4, 8, 8}}, {tiny(), {8, 16, 4}}, {moe, {4, 8, 8}}};
  StepRates rates;
  for (const Case& c : cases) {
    const SearchResult r = search_layouts(c.model, c.space, rates, 1e18);
    REQUIRE(r.rows.size() == r.counts.layouts.size());  // nothing over a memory of 1e18 B
    REQUIRE(r.rows.size() > 50);
    for (const SearchRow& row : r.rows) {
      const SearchLayout& l = row.layout;
      PredictSpec s;
      s.layers = c.model.layers, s.hidden = c.model.hidden, s.heads = c.model.heads, s.seq = c.model.seq;
      s.vocab = c.model.vocab, s.experts = c.model.experts, s.top_k = c.model.top_k, s.bf16 = true;
      s.global_batch = c.space.global_batch, s.micro_batch = l.micro_batch, s.world = c.space.gpus;
      s.dp = l.dp, s.tp = l.tp, s.pp = l.pp, s.cp = l.cp, s.ep = l.ep, s.zero = l.zero;
      s.sequence_parallel = l.sequence_parallel, s.recompute = l.recompute, s.attention = l.attention;
      const LayoutPrediction p = predict_layout(s, rates);
      u64 states = 0, dp_bytes = 0;
      for (const RankPrediction& k : p.ranks) {
        states = std::max(states, k.model_states);
        dp_bytes = std::max(dp_bytes, k.dp_bytes + k.ep_grad_bytes);  // ZeRO under ep: the dense shard over ep too
      }
      INFO(l.to_string() << " on " << c.space.gpus << " GPUs" << (c.model.experts ? " with experts" : ""));
      CHECK(row.memory.model_states == states);
      CHECK(u64(row.time.dp_bytes) == dp_bytes);
    }
  }
}
