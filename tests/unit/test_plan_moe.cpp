// tests/unit/test_plan_moe.cpp — the mixture-of-experts and expert-parallel formulas (claim C25) against numbers
// worked out by hand and against the model itself:
//  - parameters: a tiny MoE GPT counted tensor by tensor by hand; plan's counts against model/param_layout.h's
//    layouts (the whole model, every ep rank's, every tp rank's), the expert tensors and the active matmul count;
//  - the MoE block's activation items by hand (f32, f64, bf16: the MoE's arrays stay in the compute type), and
//    against the memory ledger of the model's own forwards and backwards, item by item with the rows the chunk
//    recorded, dropless and with a capacity that drops, recompute none and full — the peak too;
//  - the peak walk with each record its own size equals the uniform formulas (one process, a pipeline stage);
//  - each all-to-all's bytes by hand (counts, dispatch, combine, with the own chunk booked as elements only), the
//    order of a block's calls, the even load; the gradient ranges of an ep rank (dense runs, expert runs, buckets,
//    padding) by hand;
//  - the memory estimate counts the experts a rank holds; `plan --ep` prints C25 beside its numbers and refuses
//    what no run does.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "cli/command.h"
#include "model/model_chunk.h"
#include "model/unit_access.h"
#include "plan/ep_bytes.h"
#include "plan/memory_need.h"
#include "plan/moe_items.h"
#include "plan/pipeline_stages.h"
#include "plan/tp_bytes.h"
#include "report/ep_report.h"

using namespace shardlab;
using namespace shardlab::plan;

namespace {

using u64 = std::uint64_t;

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

ExpertDims experts(u64 E, u64 k, u64 every, u64 F) {
  ExpertDims m;
  m.experts = E, m.top_k = k, m.every = every, m.ffn = F;
  return m;
}

GPTConfig moe_config(int layers, int every, int E, int k, int F, double capacity) {
  GPTConfig c;
  c.layers = layers;
  c.hidden = 16;
  c.heads = 2;
  c.seq = 24;
  c.vocab = 32;
  c.dropout = 0;
  c.moe.experts = E;
  c.moe.top_k = k;
  c.moe.every = every;
  c.moe.ffn = F;
  c.moe.capacity = capacity;
  return c;
}

GptDims dims_of(const GPTConfig& c) {
  return GptDims{u64(c.vocab), u64(c.seq), u64(c.hidden), u64(c.layers),
                 experts(u64(c.moe.experts), u64(c.moe.top_k), u64(c.moe.every), u64(c.moe.ffn))};
}

ActivationShape shape_of(const GPTConfig& c, u64 B, u64 width, u64 stat_width, Recompute rc) {
  ActivationShape s;
  s.seq = c.seq, s.micro_batch = B, s.hidden = c.hidden, s.heads = c.heads, s.layers = c.layers, s.vocab = c.vocab;
  s.width = width, s.stat_width = stat_width, s.recompute = rc;
  s.moe = dims_of(c).moe;
  return s;
}

struct Ran {
  int rc;
  std::string out, err;
};
Ran run_plan(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int rc = plan::plan_run(args, out, err);
  return {rc, out.str(), err.str()};
}

}  // namespace

TEST_CASE("C25: a MoE GPT's parameters by hand; the router and E experts replace the MLP", "[plan][moe]") {
  // V 16, T 4, C 8, L 2, MoE in block 0 only (every 2), E 4, k 2, F 12.
  const u64 C = 8, F = 12, E = 4;
  const u64 attention = 2 * C + (3 * C * C + 3 * C) + (C * C + C) + 2 * C;  // ln1, qkv, W^O, ln2: 320
  const u64 dense_mlp = (4 * C * C + 4 * C) + (4 * C * C + C);              // 552
  const u64 expert = F * C + F + C * F + C;                                 // 212
  CHECK(attention == 320);
  const GptDims d{16, 4, C, 2, experts(E, 2, 2, F)};
  CHECK(expert_param_count(d) == expert);
  CHECK(block_param_count(d, 0) == attention + E * C + E * expert);  // 320 + 32 + 848
  CHECK(block_param_count(d, 1) == attention + dense_mlp);
  CHECK(block_param_count(d, 0, 1, 2) == attention + E * C + 2 * expert);  // ep 2: two experts
  const u64 whole = 16 * 8 + 4 * 8 + (attention + E * C + E * expert) + (attention + dense_mlp) + 2 * C + C * 16;
  CHECK(gpt_param_count(d) == whole);
  CHECK(whole == 2376);
  // Matmuls a token touches: block 1's 12C², block 0's attention 4C², the router E·C, k experts' 2·C·F; the head.
  CHECK(gpt_matmul_param_count(d) == 12 * C * C + 4 * C * C + E * C + 2 * 2 * C * F + C * 16);
}

TEST_CASE("C25: plan's counts equal the model's layouts: whole, every ep rank's and every tp rank's",
          "[plan][moe][layout]") {
  for (const auto& [layers, every, E, k, F] :
       {std::tuple{2, 1, 4, 2, 0}, std::tuple{3, 2, 8, 1, 24}, std::tuple{4, 3, 4, 4, 40}}) {
    const GPTConfig cfg = moe_config(layers, every, E, k, F, 0);
    INFO("L " << layers << " every " << every << " E " << E << " k " << k << " F " << F);
    const GptDims d = dims_of(cfg);
    const ParamLayout whole(cfg);
    CHECK(gpt_param_count(d) == whole.total());
    CHECK(gpt_matmul_param_count(d) == whole.matmul_params());
    for (int ep : {1, 2, 4}) {
      if (E % ep) continue;
      for (int r = 0; r < ep; ++r) {
        ModelSlice slice;
        slice.ep = ep, slice.ep_rank = r;
        const ParamLayout mine(cfg, slice);
        CHECK(tp_param_count(d, 1, ep) == mine.total());
        size_t expert_tensors = 0;
        for (const TensorSpec& t : mine.tensors()) expert_tensors += t.expert ? t.numel : 0;
        CHECK(expert_tensors == d.moe.blocks(d.layers) * (E / ep) * expert_param_count(d));
      }
    }
    ModelSlice tp2;
    tp2.tp = 2, tp2.tp_rank = 1;
    CHECK(tp_param_count(d, 2) == ParamLayout(cfg, tp2).total());
    StageShape st;
    st.gpt = d, st.pp = 2, st.ep = 2;
    if (layers >= 2 && E % 2 == 0) {
      ModelSlice slice;
      slice.ep = 2;
      const PipelinePartition part = stage_partition(st);
      for (int stage = 0; stage < 2; ++stage)
        CHECK(stage_param_count(st, stage) == ParamLayout(cfg, slice, part.held_units(stage)).total());
    }
  }
}

TEST_CASE("C25: a MoE block's items by hand; its arrays stay in the compute type under bf16",
          "[plan][moe][activations]") {
  // s 32, b 2, h 32, E 4, k 2, F 128 — the CLI suite's model: R = 64 rows, 128 slots.
  GPTConfig cfg = moe_config(2, 1, 4, 2, 128, 0);
  cfg.seq = 32, cfg.hidden = 32;
  for (const auto& [w, ws] : {std::pair<u64, u64>{4, 4}, {8, 8}, {2, 4}}) {
    const ActivationShape s = shape_of(cfg, 2, w, ws, Recompute::none);
    CHECK(moe_routed_slots(s) == 128);
    const MoeRows r{100, 90, 40};
    std::map<std::string, u64> bytes;
    for (const ActivationItem& i : moe_block_items(s, r)) bytes[i.name] = i.bytes;
    CHECK(bytes.count("block.fc") == 0);
    CHECK(bytes.count("block.gelu") == 0);
    CHECK(bytes["block.ln2"] == 64 * 32 * w);  // the dense part as before, w bytes
    CHECK(bytes["block.moe.probs"] == 64 * 4 * ws);
    CHECK(bytes["block.moe.lse"] == 64 * ws);
    CHECK(bytes["block.moe.gates"] == 128 * ws);
    CHECK(bytes["block.moe.slots"] == 3 * 128 * 4);           // int32
    CHECK(bytes["block.moe.counts"] == (2 * 4 + 4 + 1) * 4);  // 52: b groups of E, then E + 1 first rows
    CHECK(bytes["block.moe.expert_in"] == 90 * 32 * ws);
    CHECK(bytes["block.moe.pre"] == 90 * 128 * ws);
    CHECK(bytes["block.moe.act"] == 90 * 128 * ws);
    CHECK(bytes["block.moe.slot_out"] == 100 * 32 * ws);
  }
  const ActivationShape f32 = shape_of(cfg, 2, 4, 4, Recompute::none);
  u64 kept = 0;
  for (const ActivationItem& i : moe_block_items(f32, dropless_rows(f32))) kept += i.bytes;
  CHECK(kept == 8192 * 5 + 24576 + 16384 + 256 * 4 + 1024 + 256 + 512 + 1536 + 52 + 16384 + 65536 * 2 + 16384);
}

TEST_CASE("C25: the model's ledger holds exactly the MoE items for the rows it recorded, and the peak",
          "[plan][moe][activations][ledger]") {
  for (double capacity : {0.0, 0.75})
    for (Recompute rc : {Recompute::none, Recompute::full}) {
      INFO("capacity " << capacity << ", recompute " << recompute_name(rc));
      const GPTConfig cfg = moe_config(3, 2, 4, 2, 0, capacity);  // MoE in blocks 0 and 2
      const ParamLayout layout(cfg);
      MemoryLedger ledger;
      std::vector<float> p(layout.total()), g(layout.total());
      init_params(layout, cfg, 3, p.data(), 0, layout.total());
      const int B = 2, micro = 3;
      const ActivationPolicy policy{false, rc, AttentionKernel::naive};
      ModelChunk<float> chunk(cfg, layout, ChunkSpec::whole(cfg), B, policy, ledger);
      FlatAccess<float> access(layout, p.data(), g.data());
      std::vector<int32_t> in(size_t(micro) * B * cfg.seq), tg(in.size());
      for (size_t i = 0; i < in.size(); ++i) in[i] = int32_t((i * 7 + i / 5) % 32), tg[i] = int32_t((i * 3) % 32);
      for (int m = 0; m < micro; ++m) {
        const size_t at = size_t(m) * B * cfg.seq;
        chunk.forward(MicroBatch{m, B, in.data() + at, tg.data() + at, {}, true}, access);
        chunk.backward(m, access, 1e-3f);
      }
      const ActivationShape s = shape_of(cfg, B, 4, 4, rc);
      // The recorded rows: dropless all s·b·k; a capacity of 0.75 keeps fewer, and one process computes what it keeps.
      REQUIRE(chunk.moe_rows().size() == size_t(micro));
      std::vector<std::vector<MoeRows>> rows;
      bool dropped = false;
      for (const MoeForwardRows& f : chunk.moe_rows()) {
        REQUIRE(f.blocks.size() == 2);
        rows.emplace_back();
        for (const auto& b : f.blocks) {
          rows.back().push_back({u64(b[0]), u64(b[1]), u64(b[2])});
          CHECK(b[0] == b[1]);
          CHECK(b[1] == b[2]);
          if (capacity == 0) CHECK(u64(b[0]) == moe_routed_slots(s));
          dropped = dropped || u64(b[0]) < moe_routed_slots(s);
        }
      }
      CHECK(dropped == (capacity > 0));
      // Every item's bytes over the three forwards (a recompute allocates the record again), from those rows.
      std::map<std::string, std::pair<u64, u64>> want;  // allocations, bytes
      const u64 twice = rc == Recompute::full ? 2 : 1;
      for (const auto& f : rows)
        for (int l = 0; l < cfg.layers; ++l)
          for (const ActivationItem& i : l % 2 == 0 ? moe_block_items(s, f[l / 2]) : block_items(s)) {
            const u64 times = i.name == "block.x" ? 1 : twice;
            want[i.name].first += times, want[i.name].second += times * i.bytes;
          }
      for (const auto& [name, ab] : want) {
        INFO(name);
        REQUIRE(ledger.items().count(name));
        CHECK(ledger.items().at(name).allocations == ab.first);
        CHECK(ledger.items().at(name).bytes_allocated == ab.second);
      }
      u64 peak = 0;
      const StageActions one_by_one = make_schedule(ScheduleKind::one_f_one_b, 1, micro, 1)[0];
      peak = records_peak(one_by_one, rc == Recompute::full, [&](int mb, int) {
        ChunkRecords r;
        for (int l = 0; l < cfg.layers; ++l) {
          u64 rest = 0;
          for (const ActivationItem& i : l % 2 == 0 ? moe_block_items(s, rows[mb][l / 2]) : block_items(s)) {
            if (i.name == "block.x")
              r.x = i.bytes;
            else
              rest += i.bytes;
          }
          r.rest.push_back(rest);
        }
        r.head = true;
        for (const ActivationItem& i : head_items(s)) (i.name == "head.x" ? r.head_x : r.head_rest) += i.bytes;
        return r;
      });
      CHECK(ledger.peak(Mem::activation) == peak);
      if (capacity == 0) CHECK(peak == moe_model_activation_peak(s));
    }
}

TEST_CASE("the walk with each record its size equals the uniform formulas of a dense model", "[plan][moe][peak]") {
  ActivationShape s;
  s.seq = 64, s.micro_batch = 2, s.hidden = 32, s.heads = 4, s.layers = 4, s.vocab = 256;
  u64 x = 0, rest = 0, head_x = 0, head_rest = 0;
  for (const ActivationItem& i : block_items(s)) (i.name == "block.x" ? x : rest) += i.bytes;
  for (const ActivationItem& i : head_items(s)) (i.name == "head.x" ? head_x : head_rest) += i.bytes;
  for (Recompute rc : {Recompute::none, Recompute::full}) {
    s.recompute = rc;
    const bool full = rc == Recompute::full;
    StageShape st;
    st.gpt = GptDims{256, 64, 32, 4};
    st.pp = 2;
    const PipelinePartition part = stage_partition(st);
    for (int stage = 0; stage < 2; ++stage) {
      const ChunkSpec c = part.chunk(stage, 0);
      const StageActions acts = make_schedule(ScheduleKind::one_f_one_b, 2, 4, 1)[stage];
      const u64 walked = records_peak(acts, full, [&](int, int) {
        ChunkRecords r{x, std::vector<u64>(c.end_block - c.first_block, rest), c.head, head_x, head_rest};
        return r;
      });
      CHECK(walked == stage_activation_peak(s, part, stage, acts));
    }
    CHECK(moe_model_activation_peak(s) == activation_peak(s, 4, true));  // no experts: the dense walk
  }
}

TEST_CASE("C25: each all-to-all's bytes; the own chunk is booked as elements, never as bytes", "[plan][ep]") {
  // E 8 over e 4: 2 counts per member each way.
  const AllToAll counts = ep_counts_call(8, 4);
  CHECK(counts.purpose == "moe_counts");
  CHECK(counts.elements == 16);  // 2 × 4 members × 2, own included
  CHECK(counts.elem_bytes == 4);
  CHECK(counts.sent == 3 * 2 * 4);
  CHECK(counts.received == 24);
  // n = 128 kept (30 for its own experts), m = 140 computed (30 of them its own), h = 32, f32.
  const MoeRows r{128, 140, 30};
  const AllToAll d = ep_dispatch_call(r, 32, 4), c = ep_combine_call(r, 32, 4);
  CHECK(d.elements == (128 + 140) * 32);
  CHECK(d.sent == 98 * 32 * 4);
  CHECK(d.received == 110 * 32 * 4);
  CHECK(c.elements == d.elements);
  CHECK(c.sent == d.received);
  CHECK(c.received == d.sent);
  // The calls of a block: forward 3, backward 2, backward under full recompute 5 (the forward's three first).
  std::vector<std::string> purposes;
  for (const AllToAll& a : ep_block_calls(true, true, r, 32, 4, 8, 4)) purposes.push_back(a.purpose);
  CHECK(purposes ==
        std::vector<std::string>{"moe_counts", "moe_dispatch", "moe_combine", "moe_dispatch", "moe_combine"});
  CHECK(ep_block_calls(false, true, r, 32, 4, 8, 4).size() == 3);
  CHECK(ep_block_calls(true, false, r, 32, 4, 8, 4).size() == 2);
  // An even load: s·b·k·h·w·(e−1)/e = 32·2·2·32·4·1/2 at e = 2; the chapter-scale Mixtral-like layer at e = 8.
  const EpLayerBytes even = ep_even_layer_bytes(64, 2, 32, 4, 4, 2);
  CHECK(even.all_to_all == 8192);
  CHECK(even.counts == 8);
  CHECK(even.total() == 8 + 4 * 8192);
  CHECK(ep_even_layer_bytes(2048, 2, 4096, 4, 8, 8).all_to_all == 58720256);  // 2048·2·4096·4·7/8
}

TEST_CASE("C25: an ep rank's gradient all-reduces: dense runs over dp·e, expert runs apart, cut by buckets",
          "[plan][ep]") {
  // V 16, T 4, C 8, L 2, E 4 in every block, F 12, e 2: unit sizes 160 | 320 + 32 + 2·212 | … | 16 + 128.
  const GptDims d{16, 4, 8, 2, experts(4, 2, 1, 12)};
  const u64 emb = 160, dense = 352, ex = 424, head = 144, total = emb + 2 * (dense + ex) + head;
  CHECK(tp_param_count(d, 1, 2) == total);
  const u64 padded = total + 2;  // Ψ_pad of a gradient group that does not divide Ψ: the padding is dense
  const std::vector<GradRange> one = ep_grad_ranges(d, 1, 2, {}, padded, 1000000);  // one bucket
  REQUIRE(one.size() == 5);
  CHECK((one[0].lo == 0 && one[0].hi == emb + dense && !one[0].expert));
  CHECK((one[1].lo == emb + dense && one[1].hi == emb + dense + ex && one[1].expert));
  CHECK((one[2].hi == emb + 2 * dense + ex && !one[2].expert));
  CHECK((one[3].expert && one[3].hi == emb + 2 * (dense + ex)));
  CHECK((one[4].lo == emb + 2 * (dense + ex) && one[4].hi == padded && !one[4].expert));
  // Buckets of ≥ 800 elements in backward order: [block 1 … head + padding], then the first unit closes
  // [embeddings, block 0] (block 0 alone is 776).
  const std::vector<GradRange> cut = ep_grad_ranges(d, 1, 2, {}, padded, 800);
  REQUIRE(cut.size() == 5);
  CHECK(cut[0].lo == emb + dense + ex);  // the last units' bucket first
  CHECK(cut[2].hi == padded);
  CHECK((cut[3].lo == 0 && cut[3].hi == emb + dense));
  CHECK(cut[4].expert);
  // A pipeline stage holding block 1 alone (no head): its experts end the layout, the padding a dense run of its own.
  const std::vector<GradRange> stage = ep_grad_ranges(d, 1, 2, {false, false, true, false}, dense + ex + 1, 1000000);
  REQUIRE(stage.size() == 3);
  CHECK((!stage[0].expert && stage[1].expert && !stage[2].expert && stage[2].hi - stage[2].lo == 1));
}

TEST_CASE("the memory estimate counts a MoE rank's experts", "[plan][moe][memory]") {
  RunShape run;
  run.gpt = GptDims{256, 32, 32, 2, experts(4, 2, 1, 0)};
  run.heads = 2;
  run.micro_batch = 2;
  run.recipe.mixed = Mixed::none;
  run.layout.dp = 2;  // dp × ep = 1 × 2
  const MemoryNeed dense_one = [&] {
    RunShape r = run;
    r.gpt.moe = ExpertDims{};
    return rank_memory_need(r);
  }();
  for (u64 ep : {1, 2, 4}) {
    run.ep = ep;
    const MemoryNeed m = rank_memory_need(run);
    CHECK(m.model_states == 16.0L * tp_param_count(run.gpt, 1, ep));  // adamw f32: 16 B/param, replicated
    CHECK(m.activations > dense_one.activations);                     // the experts' rows at an even load
  }
}

TEST_CASE("plan --ep prints C25 beside its numbers; --preset 7b --ep 8 the Mixtral-like model", "[plan][ep][cli]") {
  const Ran r = run_plan({"--layers", "2", "--hidden", "32", "--heads", "2", "--seq", "32", "--micro-batch", "2",
                          "--moe-experts", "4", "--ep", "2", "--mixed", "none"});
  REQUIRE(r.rc == 0);
  for (const char* s : {"C25 \"experts live on different ranks\"", "C25 \"each MoE layer does two all-to-alls",
                        "C25 \"routing is input-dependent, so load imbalance idles ranks\"",
                        "C25 \"a load-balancing loss mitigates it\"", "E/e = 2", "93,248", "59,840", "8,192", "32,776",
                        "block.moe.slot_out"})
    CHECK(contains(r.out, s));
  const Ran m = run_plan({"--preset", "7b", "--ep", "8"});
  REQUIRE(m.rc == 0);
  const GptDims x = mixtral_like(2048);
  CHECK(gpt_param_count(x) == 32489611264ULL);
  for (const char* s : {"Mixtral-8x7B-like", "arXiv:2401.04088", "32,489,611,264", "9,937,494,016"})
    CHECK(contains(m.out, s));
  CHECK(contains(m.out, "58,720,256"));     // one all-to-all of the layer, e = 8
  CHECK(contains(m.out, "6,178,807,808"));  // a rank's parameters: dense + one expert per block
  for (const auto& bad : {std::vector<std::string>{"--ep", "2"},
                          {"--moe-experts", "4", "--ep", "3"},
                          {"--moe-experts", "4", "--moe-top-k", "5"},
                          {"--preset", "70b", "--ep", "2"},
                          {"--moe-top-k", "2"},
                          {"--preset", "7b", "--moe-experts", "8"}}) {
    const Ran b = run_plan(bad);
    CHECK(b.rc == 2);
    CHECK(b.out.empty());
    CHECK(std::count(b.err.begin(), b.err.end(), '\n') == 1);
  }
}
