// tests/unit/test_plan_cp.cpp — context parallelism's formulas (plan/cp_bytes.h, claim C24) against numbers
// worked out by hand: the ring's message, its bytes per layer and per step (with full recompute, with tp), the
// ring's buffers, the causal work per rank of both splits (also against a brute-force count over the ranks'
// token positions, model/token_positions.h); the activation items of a cp rank (plan/activation_items.h); the
// memory estimate before a run (plan/memory_need.h); one cp rank's ledger check (check/cp_check.h) passing and
// failing on a tampered total, call record or buffer; and `plan --cp` printing C24's lines and refusing bad input.
#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "check/cp_check.h"
#include "cli/command.h"
#include "plan/activation_items.h"
#include "plan/cp_bytes.h"
#include "plan/memory_need.h"
#include "plan/tp_bytes.h"

using namespace shardlab;
using namespace shardlab::plan;

namespace {

using u64 = std::uint64_t;

// s = 128, b = 2, h = 64, a = 4, L = 2, A = 2, f64: the shape of the CLI suite's cp-2 run.
CpShape small(u64 cp) {
  CpShape s;
  s.seq = 128;
  s.micro_batch = 2;
  s.hidden = 64;
  s.heads = 4;
  s.cp = cp;
  s.blocks = 2;
  s.accum = 2;
  s.elem_bytes = 8;
  return s;
}

// The causal (query, key) pairs of rank r, counted pair by pair from the positions it holds.
u64 brute_pairs(int seq, int c, ContextSplit split, int r) {
  const TokenPositions p = TokenPositions::of_rank(seq, c, r, split);
  u64 n = 0;
  for (int i = 0; i < p.count(); ++i) n += u64(p.at(i)) + 1;  // keys 0..pos(q)
  return n;
}

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

}  // namespace

TEST_CASE("C24: one message is K and V of a rank's tokens; per layer c−1 forward, 2c−1 backward", "[plan][cp]") {
  const CpShape s = small(2);
  CHECK(cp_tokens_per_rank(s) == 64);
  CHECK(cp_message_elements(s) == 16384);  // 2·2·64·64
  CHECK(cp_message_bytes(s) == 131072);    // × 8
  const CpLayerTraffic t = cp_layer_traffic(s);
  CHECK(t.forward_messages == 1);
  CHECK(t.recompute_messages == 0);
  CHECK(t.backward_messages == 3);
  CHECK(t.forward_bytes() == 131072);
  CHECK(t.backward_bytes() == 393216);
  const CpStepBytes step = cp_step_bytes(s);  // L·A = 4 layer passes
  CHECK(step.forward == 524288);
  CHECK(step.backward == 1572864);
  CHECK(step.messages == 16);
  CHECK(step.total() == 2097152);
  // One process: no ring.
  CHECK(cp_step_bytes(small(1)).total() == 0);
  CHECK(cp_ring_buffers(small(1), 2).comm_buffer == 0);
}

TEST_CASE("C24: c = 4 with tp 2 and full recompute: one more forward ring per layer", "[plan][cp]") {
  CpShape s = small(4);
  s.micro_batch = 1;
  s.tp = 2;
  s.elem_bytes = 4;
  s.recompute = Recompute::full;
  CHECK(cp_message_elements(s) == 2048);  // 2·1·32·(64/2)
  const CpLayerTraffic t = cp_layer_traffic(s);
  CHECK(t.forward_messages == 3);
  CHECK(t.recompute_messages == 3);
  CHECK(t.backward_messages == 7);
  CHECK(t.bytes() == 13 * 8192);
  CHECK(cp_step_bytes(s).total() == 4 * 13 * 8192);  // L·A = 2·2
  CHECK(cp_step_bytes(s).recompute == 4 * 3 * 8192);
}

TEST_CASE("C24: the chapter's 7B at c = 4: 16.8 MB messages, 50.3 MB forward and 117.4 MB backward per layer",
          "[plan][cp]") {
  CpShape s;
  s.seq = 2048;
  s.micro_batch = 1;
  s.hidden = 4096;
  s.heads = 32;
  s.cp = 4;
  s.blocks = 32;
  s.elem_bytes = 4;
  CHECK(cp_message_bytes(s) == 16777216);                    // 2·1·512·4096·4
  CHECK(cp_layer_traffic(s).forward_bytes() == 50331648);    // 3 ×
  CHECK(cp_layer_traffic(s).backward_bytes() == 117440512);  // 7 ×
  CHECK(cp_step_bytes(s).total() == 5368709120ULL);          // 32 layers × 10 messages
}

TEST_CASE("C24: the ring's buffers, booked once: 5 messages, the running sum and a tile scratch", "[plan][cp]") {
  const CpRingBuffers b = cp_ring_buffers(small(2), 2);
  CHECK(b.comm_buffer == 655360);  // 5 × 131,072
  CHECK(b.running_sum == 4096);    // 2·4·64 · 8
  // Tiles of 64 query rows × 256 keys: 2·64·256 + 4·64 + 64·16 (head size 16) = 34,048 elements.
  CHECK(b.scratch == 34048 * 8);
  CHECK(b.workspace() == 276480);
}

TEST_CASE("C24: zigzag gives every rank the same causal work, contiguous (2c−1)× at the last", "[plan][cp]") {
  CHECK(cp_causal_pairs(16, 2, ContextSplit::contiguous, 0) == 36);   // 8·9/2
  CHECK(cp_causal_pairs(16, 2, ContextSplit::contiguous, 1) == 100);  // 8·8 + 36
  CHECK(cp_causal_pairs(16, 2, ContextSplit::zigzag, 0) == 68);       // chunks 0, 3 of 4: 10 + 4·12 + 10
  CHECK(cp_causal_pairs(16, 2, ContextSplit::zigzag, 1) == 68);       // chunks 1, 2: 4·4 + 10 + 4·8 + 10
  for (int c : {1, 2, 3, 4, 8})
    for (ContextSplit split : {ContextSplit::zigzag, ContextSplit::contiguous}) {
      const int seq = 48 * c;
      u64 all = 0;
      for (int r = 0; r < c; ++r) {
        CHECK(cp_causal_pairs(seq, c, split, r) == brute_pairs(seq, c, split, r));
        all += brute_pairs(seq, c, split, r);
      }
      CHECK(all == u64(seq) * (seq + 1) / 2);  // every causal pair, once
    }
}

TEST_CASE("C24: a cp rank's activation items hold s/c tokens; the chapter's term ÷ c", "[plan][cp][activations]") {
  ActivationShape s;
  s.seq = 128;
  s.micro_batch = 2;
  s.hidden = 64;
  s.heads = 4;
  s.layers = 2;
  s.vocab = 256;
  s.width = s.stat_width = 8;
  s.attention = AttentionKernel::flash;
  s.cp = 2;
  auto bytes = [](const std::vector<ActivationItem>& v, const std::string& name) {
    for (const ActivationItem& i : v)
      if (i.name == name) return i.bytes;
    FAIL("no item " << name);
    return u64(0);
  };
  CHECK(bytes(block_items(s), "block.x") == 65536);     // 64·2·64 · 8
  CHECK(bytes(block_items(s), "block.qkv") == 196608);  // 3 ×
  CHECK(bytes(block_items(s), "block.lse") == 4096);    // 4·64·2 · 8
  CHECK(bytes(block_items(s), "block.fc") == 262144);
  CHECK(bytes(head_items(s), "head.probs") == 262144);  // 128 rows · 256 · 8
  CHECK(activation_peak(s, 2, true) == 2508800);        // the cp-2 run's measured peak
  s.tp = 2;  // with tp 2 and sequence parallelism: LN, residual and head input s/(c·t) rows
  s.sequence_parallel = true;
  CHECK(bytes(block_items(s), "block.x") == 32768);
  CHECK(bytes(block_items(s), "block.qkv") == 98304);
  CHECK(bytes(block_items(s), "block.lse") == 2048);
  CHECK(bytes(head_items(s), "head.probs") == 131072);  // 128 rows · 128 words · 8
  // The chapter's 7B at c = 4: 34·512·4096 + 5·32·512·2048 (the local tiles (s/c)·s).
  ActivationShape seven;
  seven.seq = 2048;
  seven.hidden = 4096;
  seven.heads = 32;
  seven.cp = 4;
  CHECK(chapter_block_bytes(seven) == 71303168ULL + 167772160ULL);
  CHECK(chapter_block_formula(seven) == "(s/c)·b·h·(34 + 5·a·s/h)");
}

TEST_CASE("C24 with tp: the regions' all-reduces carry b·(s/c)·h", "[plan][cp][tp]") {
  TpShape t;
  t.gpt = GptDims{256, 128, 64, 2};
  t.micro_batch = 2;
  t.tp = 2;
  t.cp = 2;
  t.act_bytes = 8;
  const std::vector<TpPhase> phases = tp_step_phases(t, 0, 0, 0);
  for (const TpPhase& p : phases)
    if (p.purpose.empty()) CHECK(p.payload == 8192);  // 2·64·64
  // Each region all-reduce sends 2(t−1)/t of 8,192 elements: 8,192 × 8 B, 4 per layer, L = 2.
  CHECK(tp_step_bytes(phases).region == 4 * 2 * 8192 * 8);
}

TEST_CASE("the memory estimate of a cp rank: its activation peak, and the ring's buffers", "[plan][cp][memory]") {
  RunShape run;
  run.gpt = GptDims{256, 128, 64, 2};
  run.heads = 4;
  run.micro_batch = 2;
  run.recipe.mixed = Mixed::none;
  run.recipe.dtype = Dtype::f64;
  run.layout.dp = 2;  // the gradient group dp × cp = 1 × 2
  run.attention = AttentionKernel::flash;
  run.cp = 2;
  const MemoryNeed two = rank_memory_need(run);
  CHECK(two.activations == 2508800.0L);  // exactly the measured peak of the cp-2 run
  RunShape one = run;
  one.cp = 1;
  const MemoryNeed whole = rank_memory_need(one);
  CHECK(whole.activations == 2 * 2508800.0L);  // every item ∝ tokens: twice the cp rank's
  CHECK(two.model_states == whole.model_states);
  // The ring's 655,360 + 276,480 B are counted on top of buffers sized for half the tokens.
  CHECK(two.workspace > 655360.0L + 276480.0L);
}

TEST_CASE("a cp rank's ledger entry: exact totals pass; a total, a record or the buffer off fails",
          "[plan][cp][ledger]") {
  CpShape s = small(2);  // 16 messages per step of 16,384 elements, 131,072 B
  const u64 steps = 3;
  auto rank = [&](u64 sent, u64 record_elements, u64 buffer) {
    return nlohmann::json::parse(
        R"({"rank": 0, "memory": {"comm_buffer": {"current": )" + std::to_string(buffer) +
        R"(, "peak": 1}, "workspace": {"current": 300000, "peak": 300000}}, "comm": {"totals": [
          {"op": "send", "axis": "cp", "impl": "p2p", "purpose": "ring_attention", "calls": 48,
           "elements": 786432, "sent_intra": )" +
        std::to_string(sent) + R"(, "sent_inter": 0, "recv_intra": 0, "recv_inter": 0},
          {"op": "recv", "axis": "cp", "impl": "p2p", "purpose": "ring_attention", "calls": 48,
           "elements": 786432, "sent_intra": 0, "sent_inter": 0, "recv_intra": 6291456, "recv_inter": 0},
          {"op": "gather", "axis": "cp", "impl": "mpi", "calls": 3, "elements": 6, "sent_intra": 0,
           "sent_inter": 0, "recv_intra": 0, "recv_inter": 0}],
         "calls": [{"seq": 7, "op": "send", "axis": "cp", "impl": "p2p", "elements": )" +
        std::to_string(record_elements) + R"(, "elem_bytes": 8, "sent_intra": )" + std::to_string(record_elements * 8) +
        R"(, "sent_inter": 0, "recv_intra": 0, "recv_inter": 0}]}})");
  };
  const CpRow good = check_cp_rank(rank(6291456, 16384, 655360), s, steps, "rank 0");
  CHECK(good.match);
  CHECK(good.sends == 48);
  const CpRow total_off = check_cp_rank(rank(6291456 - 8, 16384, 655360), s, steps, "rank 0");
  CHECK_FALSE(total_off.match);
  CHECK_FALSE(total_off.totals_match);
  const CpRow record_off = check_cp_rank(rank(6291456, 16385, 655360), s, steps, "rank 0");
  CHECK_FALSE(record_off.match);
  REQUIRE(record_off.bad_records.size() == 1);
  CHECK(contains(record_off.bad_records[0], "send #7: 16385 elements"));
  CHECK_FALSE(check_cp_rank(rank(6291456, 16384, 655360 - 131072), s, steps, "rank 0").match);
  s.recompute = Recompute::full;  // the formula of a recomputing run expects 1 more message per layer
  CHECK_FALSE(check_cp_rank(rank(6291456, 16384, 655360), s, steps, "rank 0").match);
}

TEST_CASE("plan --cp prints C24 beside its numbers and refuses what no run does", "[plan][cp][cli]") {
  std::ostringstream out, err;
  REQUIRE(plan_run({"--cp", "4", "--preset", "7b"}, out, err) == 0);
  const std::string o = out.str();
  for (const char* s : {"C24 \"shard tokens\"", "C24 \"ring attention circulates K/V blocks\"",
                        "C24 \"merges partial results exactly with online softmax\"",
                        "C24 \"overlaps K/V transfer with compute\"", "16,777,216 B", "50,331,648", "117,440,512",
                        "5,368,709,120", "(s/c)×s", "34·(s/c)·b·h", "[768, 1024) + [1024, 1280)"})
    CHECK(contains(o, s));
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--cp", "3", "--seq", "64"},
           {"--cp", "2", "--attention", "naive"},
           {"--cp-split", "zigzag"},
           {"--cp", "0"},
           {"--cp", "2", "--cp-split", "diagonal"},
           {"--cp", "2", "--tp", "8", "--sequence-parallel", "--seq", "8", "--heads", "8"},
           {"--ledger", "x.json", "--cp", "2"}}) {
    std::ostringstream o2, e2;
    CHECK(plan_run(args, o2, e2) == 2);
    CHECK(o2.str().empty());
    CHECK(!e2.str().empty());
  }
}
