// tests/unit/test_plan.cpp — the chapter's numbers (claims C1, C3, C4, C5) out of plan/, the GPT
// parameter count against a hand count, and `plan --ledger` passing on a matching ledger and
// failing on one off by a single byte. Expected values are written out by hand, not taken from
// the code under test.
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
#include "plan/activations.h"
#include "plan/state_bytes.h"
#include "report/plan_report.h"

using namespace shardlab;
using namespace shardlab::plan;

namespace {

constexpr std::uint64_t kGB = 1000000000ULL;  // the chapter's 1 GB = 1e9 bytes

struct Ran {
  int rc;
  std::string out, err;
};
Ran run_plan(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int rc = plan_run(args, out, err);
  return {rc, out.str(), err.str()};
}

// A ledger.json in the trainer's format, for Ψ = 123,456 with AdamW + mixed bf16 (16 B/param).
std::string sample_ledger(std::uint64_t grad_current, const std::string& extra_memory = "") {
  return R"({"world_size": 1,
  "model": {"params": 123456, "dtype": "f32", "mixed": "bf16", "optimizer": "adamw",
            "grad_accum_dtype": "bf16", "master": "fp32", "momentum": 0.9},
  "ranks": [ {"rank": 0,
              "memory": {"param":  {"current": 246912, "peak": 246912},
                         "grad":   {"current": )" +
         std::to_string(grad_current) + R"(, "peak": 246912},
                         "master": {"current": 493824, "peak": 493824},
                         "adam_m": {"current": 493824, "peak": 493824},
                         "adam_v": {"current": 493824, "peak": 493824},)" +
         extra_memory + R"(
                         "activation": {"current": 0, "peak": 5000},
                         "comm_buffer": {"current": 0, "peak": 0},
                         "workspace": {"current": 0, "peak": 0}},
              "comm": []} ] })";
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("shardlab_test_plan_" + std::to_string(getpid()) + "_" + name))
          .string();
  std::ofstream(path) << text;
  return path;
}

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

}  // namespace

TEST_CASE("C1: mixed-precision AdamW keeps 16 B/param; 7B is 112 GB split 14/14/28/28/28", "[plan]") {
  const Recipe r;  // defaults are the chapter's recipe
  const PerCategory b = model_state_bytes(r, 7000000000ULL);
  CHECK(b[Mem::param] == 14 * kGB);
  CHECK(b[Mem::grad] == 14 * kGB);
  CHECK(b[Mem::master] == 28 * kGB);
  CHECK(b[Mem::adam_m] == 28 * kGB);
  CHECK(b[Mem::adam_v] == 28 * kGB);
  CHECK(b[Mem::momentum] == 0);
  CHECK(b.total() == 112 * kGB);
  CHECK(bytes_per_param(r).optimizer_total() == 12);  // the largest share
}

TEST_CASE("C1: 70B is 1120 GB, fourteen 80 GB GPUs", "[plan]") {
  const PerCategory b = model_state_bytes(Recipe{}, 70000000000ULL);
  CHECK(b.total() == 1120 * kGB);
  CHECK(b.total() == 14 * 80 * kGB);
}

TEST_CASE("C3 and friends: bytes per parameter of every recipe", "[plan]") {
  Recipe r;
  r.grad_accum = GradAccum::fp32;
  CHECK(bytes_per_param(r)[Mem::grad] == 4);
  CHECK(bytes_per_param(r).total() == 18);  // C3: fp32 grad accumulation
  r = Recipe{};
  r.master = Master::none;
  CHECK(bytes_per_param(r).total() == 2 + 2 + 4 + 4);  // no master copy
  CHECK(bytes_per_param(r)[Mem::master] == 0);

  Recipe f32;
  f32.mixed = Mixed::none;
  CHECK(bytes_per_param(f32).total() == 4 + 4 + 4 + 4);
  CHECK(bytes_per_param(f32)[Mem::master] == 0);
  Recipe f64 = f32;
  f64.dtype = Dtype::f64;
  CHECK(bytes_per_param(f64).total() == 8 + 8 + 8 + 8);
  CHECK(bytes_per_param(f64)[Mem::param] == 8);

  Recipe sgd;  // C3: SGD+momentum keeps one state
  sgd.optimizer = Optimizer::sgd;
  CHECK(bytes_per_param(sgd).total() == 2 + 2 + 4 + 4);
  CHECK(bytes_per_param(sgd)[Mem::momentum] == 4);
  CHECK(bytes_per_param(sgd)[Mem::adam_m] == 0);
  Recipe sgd32 = f32;
  sgd32.optimizer = Optimizer::sgd;
  CHECK(bytes_per_param(sgd32).total() == 4 + 4 + 4);
  Recipe sgd64 = f64;
  sgd64.optimizer = Optimizer::sgd;
  CHECK(bytes_per_param(sgd64).total() == 8 + 8 + 8);
  sgd32.momentum = 0.0;  // momentum 0: no state at all
  CHECK(bytes_per_param(sgd32).total() == 4 + 4);
  sgd.momentum = 0.0;
  CHECK(bytes_per_param(sgd).total() == 2 + 2 + 4);  // bf16 still keeps its master

  Recipe a8;  // C3: 8-bit Adam, optimizer 12 → ~3
  a8.optimizer = Optimizer::adam8bit;
  CHECK(bytes_per_param(a8).optimizer_total() == 3);
  CHECK(bytes_per_param(a8).total() == 2 + 2 + 3);
}

TEST_CASE("C4: 7B activations 0.285 + 0.671 = 0.956 GB per layer, 30.6 GB, ~122 GB at b=4", "[plan]") {
  ActivationDims d{4096, 32, 32, 2048, 1};  // h, L, a, s, b
  const ActivationEstimate e = estimate_activations(d, AttentionKernel::naive);
  CHECK(2048ULL * 1 * 4096 == 8388608ULL);  // sbh ≈ 8.39e6
  CHECK(e.linear_per_layer == 34ULL * 8388608ULL);
  CHECK(e.quadratic_per_layer == 80ULL * 8388608ULL);  // 5·a·s/h = 80
  CHECK(e.linear_per_layer / 1e9 == Approx(0.285).margin(0.0005));
  CHECK(e.quadratic_per_layer / 1e9 == Approx(0.671).margin(0.0005));
  CHECK(e.per_layer / 1e9 == Approx(0.956).margin(0.0005));
  CHECK(e.total / 1e9 == Approx(30.6).margin(0.05));
  CHECK(e.total == 32 * e.per_layer);
  d.micro_batch = 4;
  const ActivationEstimate e4 = estimate_activations(d, AttentionKernel::naive);
  CHECK(e4.total / 1e9 == Approx(122).margin(0.5));
  CHECK(e4.total > 112 * kGB);  // exceeds the model states
}

TEST_CASE("C5: flash attention drops the s² term, ~9 GB for 32 layers", "[plan]") {
  const ActivationEstimate f = estimate_activations(ActivationDims{4096, 32, 32, 2048, 1}, AttentionKernel::flash);
  CHECK(f.quadratic_per_layer == 0);
  CHECK(f.per_layer / 1e9 == Approx(0.285).margin(0.0005));
  CHECK(f.total / 1e9 == Approx(9).margin(0.2));
}

TEST_CASE("GPT parameter count matches a hand count", "[plan]") {
  // L=1, C=8, V=16, T=4, counted by hand:
  const std::uint64_t wte = 16 * 8, wpe = 4 * 8;
  const std::uint64_t ln1 = 2 * 8, qkv = 8 * 24 + 24, proj = 8 * 8 + 8, ln2 = 2 * 8;
  const std::uint64_t fc = 8 * 32 + 32, fc_proj = 32 * 8 + 8, ln_f = 2 * 8, head = 8 * 16;
  const std::uint64_t hand = wte + wpe + ln1 + qkv + proj + ln2 + fc + fc_proj + ln_f + head;
  CHECK(hand == 1176);
  const GptDims tiny{16, 4, 8, 1};  // vocab, seq, hidden, layers
  CHECK(gpt_param_count(tiny) == hand);
  CHECK(gpt_matmul_param_count(tiny) == 8 * 24 + 8 * 8 + 8 * 32 + 32 * 8 + 8 * 16);  // 896
  CHECK(gpt_flops_per_token(tiny, 4) == 6 * 896 + 12 * 1 * 4 * 8);
  // The trainer's default model (V 256, T 64, C 128, L 4): 4·198,272 + 32,768 + 8,192 + 256 + 32,768.
  CHECK(gpt_param_count(GptDims{}) == 867072);
}

TEST_CASE("plan --preset 7b and 70b print the chapter's numbers", "[plan][cli]") {
  const Ran r7 = run_plan({"--preset", "7b"});
  REQUIRE(r7.rc == 0);
  for (const char* s :
       {"112.000 GB", "14.000 GB", "28.000 GB", "0.285 GB", "0.671 GB", "0.956 GB", "30.6", "9.127 GB", "126.000 GB"})
    CHECK(contains(r7.out, s));
  const Ran r4 = run_plan({"--preset", "7b", "--micro-batch", "4"});
  CHECK(r4.rc == 0);
  CHECK(contains(r4.out, "122.4"));
  const Ran r70 = run_plan({"--preset", "70b"});
  CHECK(r70.rc == 0);
  CHECK(contains(r70.out, "1120.000 GB"));
  CHECK(contains(r70.out, "14.00 × an 80 GB GPU"));
  const Ran dims = run_plan({"--layers", "1", "--hidden", "8", "--heads", "2", "--seq", "4", "--vocab", "16"});
  CHECK(dims.rc == 0);
  CHECK(contains(dims.out, "1,176 params"));
  const Ran f64 = run_plan({"--preset", "7b", "--dtype", "f64"});  // f64 alone: pure f64, 32 B/param
  CHECK(f64.rc == 0);
  CHECK(contains(f64.out, "pure f64"));
  CHECK(contains(f64.out, "224,000,000,000"));
}

TEST_CASE("plan rejects bad input with one message and exit 2", "[plan][cli]") {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"--bogus"},
                                             {"--preset", "13b"},
                                             {"--optimizer", "lion"},
                                             {"--micro-batch", "0"},
                                             {"--layers", "x"},
                                             {"--hidden", "130", "--heads", "4"},
                                             {"--preset", "7b", "--hidden", "64"},
                                             {"--seq"},
                                             {"--ledger", "/nonexistent/ledger.json"},
                                             {"--ledger", "a.json", "--dtype", "f64"},
                                             {"--dtype", "f64", "--mixed", "bf16"}}) {
    const Ran r = run_plan(args);
    CHECK(r.rc == 2);
    CHECK(!r.err.empty());
    CHECK(r.out.empty());
  }
}

TEST_CASE("ledger check: exact match passes, one byte off fails", "[plan][ledger]") {
  const LedgerCheck good = check_ledger_text(sample_ledger(246912));
  CHECK(good.psi == 123456);
  CHECK(good.ok());
  const LedgerCheck off = check_ledger_text(sample_ledger(246913));
  CHECK_FALSE(off.ok());
  CHECK_FALSE(off.ranks.at(0).states[static_cast<int>(Mem::grad)].match);
  CHECK(off.ranks.at(0).states[static_cast<int>(Mem::param)].match);
  // A category the formula says is 0 must be absent or 0.
  CHECK(check_ledger_text(sample_ledger(246912, R"("momentum": {"current": 0, "peak": 0},)")).ok());
  CHECK_FALSE(check_ledger_text(sample_ledger(246912, R"("momentum": {"current": 8, "peak": 8},)")).ok());

  const std::string good_path = write_temp("good.json", sample_ledger(246912));
  const std::string off_path = write_temp("off.json", sample_ledger(246913));
  const std::string bad_path = write_temp("bad.json", "{\"model\": {\"params\": -1}}");
  const Ran g = run_plan({"--ledger", good_path});
  CHECK(g.rc == 0);
  CHECK(contains(g.out, "493,824"));
  const Ran o = run_plan({"--ledger=" + off_path});
  CHECK(o.rc == 1);
  CHECK(contains(o.out, "MISMATCH"));
  CHECK(run_plan({"--ledger", bad_path}).rc == 2);
  for (const std::string& p : {good_path, off_path, bad_path}) std::remove(p.c_str());
}

TEST_CASE("ledger check: SGD in pure f64, and momentum 0 keeps no state", "[plan][ledger]") {
  const std::string ledger = R"({"world_size": 2,
      "model": {"params": 1000, "dtype": "f64", "mixed": "none", "optimizer": "sgd", "momentum": 0.9},
      "ranks": [ {"rank": 1, "memory": {}, "comm": []},
                 {"rank": 0, "memory": {"param": {"current": 8000, "peak": 8000},
                                        "grad": {"current": 8000, "peak": 8000},
                                        "momentum": {"current": 8000, "peak": 8000}}, "comm": []} ] })";
  const LedgerCheck c = check_ledger_text(ledger);
  CHECK(c.world_size == 2);
  CHECK(c.ok());
  std::string no_momentum = ledger;
  no_momentum.replace(no_momentum.find("\"momentum\": 0.9"), 15, "\"momentum\": 0.0");
  CHECK_FALSE(check_ledger_text(no_momentum).ok());  // the ledger still holds 8000 momentum bytes
  CHECK_THROWS(check_ledger_text("{\"model\": {}}"));
}
