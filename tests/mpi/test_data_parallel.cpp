// The data-parallel engine DataParallel<T> (parallel/data_parallel.h) on a tiny f64 GPT, one optimizer
// step on one global batch of N samples (one per rank, micro-batch 1), driven exactly as the trainer does:
//  - DP, ZeRO-1/2/3 (also with --overlap off, --prefetch off, --fsdp full) agree BIT FOR BIT: loss,
//    gradient norm, the gradient shard each rank owns (against DP's full gradient) and the weights each
//    rank holds after the step — the engine's documented contract (every ring splits at shard bounds);
//  - FSDP hybrid (when the world makes ≥ 2 simulated nodes) and DP agree with a single process that runs
//    the WHOLE global batch in one forward/backward: gradients, loss and norm to 1e-12 relative (summation
//    order differs), weights after the AdamW step to 1e-10 (see kWeightRtol);
//  - bad layouts are refused with std::invalid_argument and one sentence naming the flag;
//  - the memory ledger's model-state bytes per rank equal the planner's per-rank formula (plan/sharding.h)
//    for a bf16 recipe, under every strategy, before and after a step; ZeRO-3's gathers stay transient.
// Dropout is on, so a rank that used the wrong global sample index (data or dropout mask) would show.
// The same with units at offsets that are not a multiple of a 64-byte line (hidden 35): buffers holding a
// range of the flat layout keep each element's whole-buffer alignment (core/ledger.h alignment_phase).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "../common/worst.h"
#include "comm/process_grid.h"
#include "core/rng.h"
#include "helpers.h"
#include "model/gpt.h"
#include "model/param_layout.h"
#include "optim/model_states.h"
#include "parallel/data_parallel.h"
#include "plan/sharding.h"
#include "plan/state_bytes.h"
#include "train/train_config.h"

using namespace shardlab;
using namespace shardlab::test;

namespace {

constexpr uint64_t kSeed = 4242;
constexpr int64_t kStep = 1;
constexpr double kLr = 1e-3;
constexpr double kRtol = 1e-12;
// AdamW's first step moves a weight by lr·g/(|g| + ε): where |g| ≲ ε it magnifies the gradient's
// reorder noise by up to lr/ε = 1e5, so weights are compared with the one process more loosely (a real
// bug moves them by O(lr), 1e7 times more than this allows).
constexpr double kWeightRtol = 1e-10;

// A 2-layer GPT, hidden 32, 2 heads, 16 tokens, vocab 64: Ψ = 2VC + TC + L(12C² + 13C) + 2C = 30080 (padded
// when N = 3). `unaligned` picks hidden 35, 5 heads, 17 tokens: Ψ = 35455, odd and no multiple of 3, so every
// world pads, and units start at offsets that are no multiple of 8 elements (see the hidden test case).
TrainConfig tiny_config(int global_batch, bool unaligned = false) {
  TrainConfig cfg;
  cfg.model.layers = 2;
  cfg.model.hidden = unaligned ? 35 : 32;
  cfg.model.heads = unaligned ? 5 : 2;
  cfg.model.seq = unaligned ? 17 : 16;
  cfg.model.vocab = 64;
  cfg.model.dropout = 0.1;
  cfg.micro_batch = 1;
  cfg.global_batch = global_batch;
  cfg.recipe.dtype = Dtype::f64;
  cfg.run.seed = kSeed;
  cfg.layout.bucket_mb = 0.05;  // 6250 doubles: DP/ZeRO-1 sync in several buckets during backward
  return cfg;
}

// The global batch of the step: sample k is a window of T+1 tokens from the counter RNG (layout-free).
struct Batch {
  std::vector<int32_t> inputs, targets;  // (samples, T)
};
Batch make_batch(int samples, int T, int V) {
  Batch b;
  b.inputs.resize(size_t(samples) * T);
  b.targets.resize(size_t(samples) * T);
  RngStream rng = rng_stream(kSeed, "test:data_parallel tokens", kStep);
  for (int k = 0; k < samples; ++k)
    for (int t = 0; t < T; ++t) {
      const uint64_t i = uint64_t(k) * (T + 1) + t;
      b.inputs[size_t(k) * T + t] = static_cast<int32_t>(rng.below(i, V));
      b.targets[size_t(k) * T + t] = static_cast<int32_t>(rng.below(i + 1, V));
    }
  return b;
}

struct Variant {
  const char* label;
  const char* expect;  // strategy_name() the flags must select
  int zero;
  const char* fsdp;
  const char* overlap;
  const char* prefetch;
  bool bit_identical;  // to DP of the same size (hybrid reduces in another order: tolerance)
};

// A store's contents copied out, indexed by flat offset: element i is v[i - begin].
struct Range {
  const std::vector<double>& v;
  size_t begin;
  double operator[](size_t i) const { return v[i - begin]; }
};

// What one rank holds after one step under one layout.
struct StepResult {
  std::string strategy;
  ShardLayout shards;
  double loss = 0, gnorm = 0;
  size_t grad_begin = 0;
  std::vector<double> grads;  // states().grads() after finish_gradients, from grad_begin
  size_t param_begin = 0;
  std::vector<double> params;  // states().params() after optimizer_step, from param_begin
  Range grad() const { return {grads, grad_begin}; }
  Range param() const { return {params, param_begin}; }
  size_t grad_end() const { return grad_begin + grads.size(); }
  size_t param_end() const { return param_begin + params.size(); }
};

std::vector<double> copy_store(FlatStore<double>& s) {
  const double* p = s.t(s.begin());
  return std::vector<double>(p, p + s.size());
}

// One step as src/train/trainer.cpp drives it: rank r of the dp group takes global sample r.
StepResult run_step(const TrainConfig& base, const Variant& v, int ranks_per_node, const Batch& batch) {
  TrainConfig cfg = base;
  cfg.layout.zero = v.zero;
  REQUIRE(read_word(kFsdpWords, v.fsdp, &cfg.layout.fsdp));
  cfg.layout.overlap = std::string(v.overlap) == "on";
  cfg.layout.prefetch = std::string(v.prefetch) == "on";
  cfg.layout.ranks_per_node = ranks_per_node;
  MemoryLedger ledger;
  Trace trace;
  ProcessGrid grid(GridSizes{}, ranks_per_node, nullptr, nullptr, CommImpl::ring);
  ParamLayout layout(cfg.model);
  DataParallel<double> engine(cfg.layout, cfg.recipe, cfg.optimizer, layout, grid, ledger, trace);
  engine.states().init_weights(cfg.model, cfg.run.seed);
  GPT<double> model(cfg.model, layout, cfg.micro_batch, ledger);

  const int dp = grid.size(Axis::dp), dp_rank = grid.coord(Axis::dp), T = cfg.model.seq;
  const int per_rank = cfg.global_batch / dp;
  const double tokens = double(cfg.global_batch) * T;
  const uint64_t first = uint64_t(dp_rank) * per_rank;

  StepResult r;
  r.strategy = strategy_name(engine.strategy());
  r.shards = engine.shards();
  engine.begin_step();
  engine.begin_backward(true);
  const double local = model.forward(engine, batch.inputs.data() + first * T, batch.targets.data() + first * T, true,
                                     {cfg.run.seed, uint64_t(kStep), first});
  model.backward(engine, 1.0 / tokens);
  engine.finish_gradients();
  r.loss = engine.sums().over_ranks(local) / tokens;
  r.gnorm = engine.grad_norm();
  r.grad_begin = engine.states().grads().begin();
  r.grads = copy_store(engine.states().grads());
  engine.optimizer_step(kStep, kLr, 1.0);
  r.param_begin = engine.states().params().begin();
  r.params = copy_store(engine.states().params());
  return r;
}

// The single-process reference on this rank: the whole global batch in ONE forward/backward.
struct Reference {
  double loss = 0, gnorm = 0;
  std::vector<double> grads, params, init;
};
Reference run_reference(const TrainConfig& cfg, const Batch& batch) {
  MemoryLedger ledger;
  ParamLayout layout(cfg.model);
  ModelStates<double> states(cfg.recipe, cfg.optimizer, layout, ledger);
  states.init_weights(cfg.model, cfg.run.seed);
  GPT<double> model(cfg.model, layout, cfg.global_batch, ledger);
  const double tokens = double(cfg.global_batch) * cfg.model.seq;
  Reference ref;
  ref.init = copy_store(states.params());
  states.zero_grads();
  const double loss_sum = model.forward(states.compute_params(), batch.inputs.data(), batch.targets.data(), true,
                                        {cfg.run.seed, uint64_t(kStep), 0});
  ref.loss = loss_sum / tokens;
  model.backward(states.backward_grads(), states.compute_params(), 1.0 / tokens);
  states.end_micro_batch();
  ref.gnorm = states.grad_norm();
  ref.grads = copy_store(states.grads());
  states.optimizer_step(kStep, kLr, 1.0);
  ref.params = copy_store(states.params());
  return ref;
}

// Worst relative difference of a against b over [lo, hi), tensor by tensor: max|a - b| / max|b| within each
// tensor (a tensor whose reference is all zeros must match exactly). Also counts the elements that differ.
struct RelDiff {
  double worst = 0;
  size_t differing = 0;
  std::string where;
};
RelDiff rel_diff(const ParamLayout& layout, size_t lo, size_t hi, Range a, Range b) {
  RelDiff d;
  for (const TensorSpec& t : layout.tensors()) {
    const size_t x = std::max(lo, t.offset), y = std::min(hi, t.offset + t.numel);
    if (x >= y) continue;
    double diff = 0, scale = 0;
    for (size_t i = x; i < y; ++i) {
      diff = test::worst_of(diff, std::abs(a[i] - b[i]));
      scale = test::worst_of(scale, std::abs(b[i]));
      d.differing += a[i] != b[i];
    }
    const double rel = diff == 0 ? 0 : scale == 0 ? std::numeric_limits<double>::infinity() : diff / scale;
    if (rel > d.worst) {
      d.worst = rel;
      d.where = t.name;
    }
  }
  return d;
}

// Elements of [lo, hi) whose bits differ.
size_t bit_mismatches(size_t lo, size_t hi, Range a, Range b) {
  return hi > lo ? mismatches(&a.v[lo - a.begin], &b.v[lo - b.begin], 0, hi - lo) : 0;
}

bool close(double a, double b, double rtol) { return std::abs(a - b) <= rtol * std::abs(b); }

uint64_t fnv(const std::vector<double>& v) {
  uint64_t h = 0xcbf29ce484222325ULL;
  const unsigned char* p = reinterpret_cast<const unsigned char*>(v.data());
  for (size_t i = 0; i < v.size() * sizeof(double); ++i) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

// A proper divisor K of N giving ≥ 2 simulated nodes (the largest), or 0 when N = 1.
int hybrid_ranks_per_node(int N) {
  for (int k = N / 2; k >= 1; --k)
    if (N % k == 0) return k;
  return 0;
}

}  // namespace

namespace {

void check_one_step(bool unaligned) {
  const int N = world_size();
  const TrainConfig cfg = tiny_config(N, unaligned);
  const ParamLayout layout(cfg.model);
  const size_t psi = layout.total();
  const Batch batch = make_batch(N, cfg.model.seq, cfg.model.vocab);
  const Reference ref = run_reference(cfg, batch);

  const Variant dp_variant{"dp", "dp", 0, "none", "on", "on", true};
  const std::vector<Variant> others = {
      {"zero1", "zero1", 1, "none", "on", "on", true},
      {"zero2", "zero2", 2, "none", "on", "on", true},
      {"zero3", "zero3", 3, "none", "on", "on", true},
      {"dp, --overlap off", "dp", 0, "none", "off", "on", true},
      {"zero2, --overlap off", "zero2", 2, "none", "off", "on", true},
      {"--fsdp full, --prefetch off", "zero3", 0, "full", "on", "off", true},
      {"--fsdp hybrid", "hybrid", 0, "hybrid", "on", "on", false},
  };
  const int K = hybrid_ranks_per_node(N);

  const StepResult dp = run_step(cfg, dp_variant, 0, batch);
  CHECK(dp.strategy == "dp");
  REQUIRE(dp.grad_begin == 0);
  REQUIRE(dp.grads.size() == dp.shards.padded());
  REQUIRE(dp.params.size() == dp.shards.padded());
  CHECK(dp.shards.group == N);

  // The step did something: a non-zero gradient, weights moved away from their initial values.
  CHECK(dp.gnorm > 0);
  size_t moved = 0;
  for (size_t i = 0; i < psi; ++i) moved += test::moved(dp.param()[i], ref.init[i]);
  CHECK(moved > psi / 2);
  // Padding past Ψ is zero in gradients and weights.
  size_t pad_nonzero = 0;
  for (size_t i = psi; i < dp.shards.padded(); ++i) pad_nonzero += dp.grad()[i] != 0 || dp.param()[i] != 0;
  CHECK(pad_nonzero == 0);

  // Every DP replica holds the same full gradient and weights, bit for bit.
  {
    Communicator w = world(nullptr);
    const std::vector<uint64_t> gh = w.all_gather_value<uint64_t>(fnv(dp.grads));
    const std::vector<uint64_t> ph = w.all_gather_value<uint64_t>(fnv(dp.params));
    CHECK(std::count(gh.begin(), gh.end(), gh[0]) == N);
    CHECK(std::count(ph.begin(), ph.end(), ph[0]) == N);
  }

  // (d) DP against the single process over the whole batch: equal to summation-order noise.
  {
    INFO("dp vs one process on " << N << " rank(s)");
    const RelDiff g = rel_diff(layout, 0, psi, dp.grad(), {ref.grads, 0});
    INFO("gradient: worst relative difference " << g.worst << " in " << g.where << ", " << g.differing
                                                << " elements differ");
    CHECK(g.worst <= kRtol);
    if (N >= 2) CHECK(g.differing > 0);  // the orders really differ, so the bit-identity below is no accident
    const RelDiff p = rel_diff(layout, 0, psi, dp.param(), {ref.params, 0});
    INFO("weights after the step: worst relative difference " << p.worst << " in " << p.where);
    CHECK(p.worst <= kWeightRtol);
    CHECK(close(dp.loss, ref.loss, kRtol));
    CHECK(close(dp.gnorm, ref.gnorm, kRtol));
  }

  for (const Variant& v : others) {
    const bool hybrid = std::string(v.fsdp) == "hybrid";
    if (hybrid && K == 0) continue;  // one rank cannot make two nodes
    const StepResult s = run_step(cfg, v, hybrid ? K : 0, batch);
    INFO(v.label << " vs dp on " << N << " rank(s)" << (hybrid ? ", ranks per node " + std::to_string(K) : ""));
    CHECK(s.strategy == v.expect);
    CHECK(s.shards.group == (hybrid ? K : N));
    CHECK(s.shards.params == psi);

    // The gradient shard this rank owns: [my_begin, my_end) ∩ [0, Ψ).
    const size_t lo = s.shards.my_begin(), hi = std::min(s.shards.my_end(), psi);
    const bool sharded_grads = s.strategy == "zero2" || s.strategy == "zero3" || s.strategy == "hybrid";
    if (sharded_grads) {
      CHECK(s.grad_begin == s.shards.my_begin());
      CHECK(s.grads.size() == s.shards.shard());
    } else {
      CHECK(s.grad_begin == 0);
      CHECK(s.grads.size() == s.shards.padded());
    }
    // The weights this rank holds: its shard (zero3, hybrid) or everything (all-gathered after the step).
    const bool sharded_params = s.strategy == "zero3" || s.strategy == "hybrid";
    CHECK(s.param_begin == (sharded_params ? s.shards.my_begin() : 0));
    CHECK(s.params.size() == (sharded_params ? s.shards.shard() : s.shards.padded()));
    const size_t plo = s.param_begin, phi = std::min(s.param_end(), psi);

    if (v.bit_identical) {
      CHECK(s.loss == dp.loss);                                 // (forward and the loss sum are the same arithmetic)
      CHECK(s.gnorm == dp.gnorm);                               // (a)
      CHECK(bit_mismatches(lo, hi, s.grad(), dp.grad()) == 0);  // (b)
      CHECK(bit_mismatches(plo, phi, s.param(), dp.param()) == 0);  // (c)
    } else {  // hybrid: node-local reduce-scatter then a cross-node all-reduce, another summation order
      const RelDiff g = rel_diff(layout, lo, hi, s.grad(), dp.grad());
      const RelDiff r = rel_diff(layout, lo, hi, s.grad(), {ref.grads, 0});
      const RelDiff p = rel_diff(layout, plo, phi, s.param(), {ref.params, 0});
      INFO("gradient shard vs dp: worst " << g.worst << " in " << g.where << "; vs one process: worst " << r.worst
                                          << "; weights vs one process: worst " << p.worst << " in " << p.where);
      CHECK(g.worst <= kRtol);
      CHECK(r.worst <= kRtol);
      CHECK(p.worst <= kWeightRtol);
      CHECK(close(s.loss, ref.loss, kRtol));
      CHECK(close(s.gnorm, ref.gnorm, kRtol));
    }
    // Padding past Ψ stays zero in what this rank stores.
    size_t pad = 0;
    for (size_t i = std::max(psi, s.grad_begin); i < s.grad_end(); ++i) pad += s.grad()[i] != 0;
    for (size_t i = std::max(psi, s.param_begin); i < s.param_end(); ++i) pad += s.param()[i] != 0;
    CHECK(pad == 0);
  }
}

}  // namespace

TEST_CASE("data parallel: one step agrees across DP, ZeRO-1/2/3, FSDP hybrid and one process", "[data_parallel]") {
  check_one_step(false);
}

// Units that start at offsets that are not a multiple of 8 elements: if ZeRO-2/3/hybrid's unit-sized
// gradient buffers were plainly 64-byte aligned, they would differ in alignment from DP's full buffer (unit
// u at offset unit_begin(u)), and Eigen's vectorised sums (linear_backward's bias gradient) would round a
// few elements differently: the bit-identity would break. Unit buffers keep the whole buffer's alignment.
TEST_CASE("data parallel: one step agrees with unit offsets that are not 64-byte aligned",
          "[data_parallel][data_parallel_unaligned]") {
  check_one_step(true);
}

namespace {

void make_grid(GridSizes s, int ranks_per_node) { ProcessGrid g(s, ranks_per_node, nullptr, nullptr, CommImpl::ring); }

// The std::invalid_argument message of a refused grid ("" if it was not refused).
std::string grid_refusal(GridSizes s, int ranks_per_node) {
  try {
    make_grid(s, ranks_per_node);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

// One clear sentence: non-empty, one line, naming what to change.
void check_sentence(const std::string& m, const std::string& mentions) {
  INFO("message: \"" << m << "\"");
  CHECK(!m.empty());
  CHECK(m.find('\n') == std::string::npos);
  CHECK(m.find(mentions) != std::string::npos);
}

}  // namespace

TEST_CASE("data parallel: bad layouts are refused with one clear sentence", "[data_parallel]") {
  const int W = world_size();

  // Axis sizes that do not multiply to the world size.
  if (W > 1) {
    CHECK_THROWS_AS(make_grid(GridSizes{W - 1, 1, 1, 1, 1}, 0), std::invalid_argument);
    check_sentence(grid_refusal({W - 1, 1, 1, 1, 1}, 0), "the world has " + std::to_string(W) + " ranks");
  }
  CHECK_THROWS_AS(make_grid(GridSizes{W + 1, 1, 1, 1, 1}, 0), std::invalid_argument);
  check_sentence(grid_refusal({W + 1, 1, 1, 1, 1}, 0), "the world has " + std::to_string(W) + " ranks");
  CHECK_THROWS_AS(make_grid(GridSizes{0, W + 1, 1, 1, 1}, 0), std::invalid_argument);  // tp does not divide W
  check_sentence(grid_refusal({0, W + 1, 1, 1, 1}, 0), "does not divide the world size");

  // --ranks-per-node that does not divide the world (the smallest such K >= 2), or is negative.
  int k = 2;
  while (W % k == 0) ++k;
  CHECK_THROWS_AS(make_grid(GridSizes{}, k), std::invalid_argument);
  check_sentence(grid_refusal({}, k), "--ranks-per-node " + std::to_string(k) + " does not divide");
  CHECK_THROWS_AS(make_grid(GridSizes{}, -1), std::invalid_argument);
  check_sentence(grid_refusal({}, -1), "--ranks-per-node");
  CHECK_NOTHROW(make_grid(GridSizes{}, W));  // the valid neighbour passes: one node of W ranks

  // FSDP hybrid needs the dp group over at least 2 nodes: the engine refuses one node of W ranks.
  TrainConfig cfg = tiny_config(W);
  cfg.layout.fsdp = Strategy::hybrid;
  cfg.layout.ranks_per_node = W;
  const ParamLayout layout(cfg.model);
  MemoryLedger ledger;
  Trace trace;
  ProcessGrid one_node(GridSizes{}, W, nullptr, nullptr, CommImpl::ring);
  CHECK(one_node.nodes() == 1);
  CHECK_THROWS_AS(DataParallel<double>(cfg.layout, cfg.recipe, cfg.optimizer, layout, one_node, ledger, trace),
                  std::invalid_argument);
  std::string m;
  try {
    DataParallel<double> e(cfg.layout, cfg.recipe, cfg.optimizer, layout, one_node, ledger, trace);
  } catch (const std::invalid_argument& e) {
    m = e.what();
  }
  check_sentence(m, "--fsdp hybrid");
  CHECK(ledger.model_state_bytes() == 0);  // refused before any model state was allocated
}

namespace {

// The planner's Ψ and per-rank bytes for the layout, category by category (ledger order param … momentum).
std::vector<uint64_t> planned_bytes(const TrainConfig& cfg, int strategy_index, uint64_t dp, uint64_t ranks_per_node,
                                    uint64_t psi) {
  const Recipe r = cfg.recipe;
  plan::Layout l;
  l.strategy = static_cast<decltype(l.strategy)>(strategy_index);  // dp, zero1, zero2, zero3, hybrid
  l.dp = dp;
  l.ranks_per_node = ranks_per_node;
  l.accum = 1;
  const auto per = plan::per_rank_model_state_bytes(r, psi, l);
  return std::vector<uint64_t>(per.v.begin(), per.v.end());
}

}  // namespace

TEST_CASE("data parallel: model-state bytes per rank equal the planner's formula (bf16, AdamW)", "[data_parallel]") {
  const int N = world_size();
  const int K = hybrid_ranks_per_node(N);
  struct Layout {
    const char* name;
    int index;
    int zero;
    const char* fsdp;
  };
  const Layout layouts[] = {{"dp", 0, 0, "none"},
                            {"zero1", 1, 1, "none"},
                            {"zero2", 2, 2, "none"},
                            {"zero3", 3, 3, "none"},
                            {"hybrid", 4, 0, "hybrid"}};
  for (const char* accum : {"bf16", "fp32"}) {  // 16 and 18 bytes per parameter (C1, C3)
    double dp_gnorm = -1;
    for (const Layout& L : layouts) {
      const bool hybrid = L.index == 4;
      if (hybrid && K == 0) continue;
      TrainConfig cfg = tiny_config(N);
      cfg.recipe.dtype = Dtype::f32;
      cfg.recipe.mixed = Mixed::bf16;
      REQUIRE(parse_grad_accum(accum, &cfg.recipe.grad_accum));
      cfg.recipe.optimizer = Optimizer::adamw;
      cfg.layout.zero = L.zero;
      REQUIRE(read_word(kFsdpWords, L.fsdp, &cfg.layout.fsdp));
      cfg.layout.ranks_per_node = hybrid ? K : 0;
      INFO(L.name << ", grad accumulation " << accum << ", " << N << " rank(s)"
                  << (hybrid ? ", ranks per node " + std::to_string(K) : ""));

      const uint64_t psi = plan::gpt_param_count(
          {uint64_t(cfg.model.vocab), uint64_t(cfg.model.seq), uint64_t(cfg.model.hidden), uint64_t(cfg.model.layers)});
      const ParamLayout layout(cfg.model);
      CHECK(layout.total() == psi);
      const std::vector<uint64_t> want = planned_bytes(cfg, L.index, N, hybrid ? K : 0, psi);
      uint64_t want_total = 0;
      for (uint64_t b : want) want_total += b;

      MemoryLedger ledger;
      Trace trace;
      ProcessGrid grid(GridSizes{}, cfg.layout.ranks_per_node, nullptr, nullptr, CommImpl::ring);
      DataParallel<float> engine(cfg.layout, cfg.recipe, cfg.optimizer, layout, grid, ledger, trace);
      engine.states().init_weights(cfg.model, cfg.run.seed);
      CHECK(strategy_name(engine.strategy()) == std::string(L.name));
      auto check_ledger = [&](const char* when) {
        INFO(when);
        for (int c = 0; c < 6; ++c) {
          INFO("category " << mem_name(static_cast<Mem>(c)));
          CHECK(ledger.current(static_cast<Mem>(c)) == want[c]);
        }
        CHECK(ledger.model_state_bytes() == want_total);
      };
      check_ledger("after construction");

      // One step; the unit gathers and unit gradient buffers of ZeRO-2/3 must be gone again afterwards.
      GPT<float> model(cfg.model, layout, cfg.micro_batch, ledger);
      ledger.reset_peaks();
      const Batch batch = make_batch(N, cfg.model.seq, cfg.model.vocab);
      const int r = grid.coord(Axis::dp), T = cfg.model.seq;
      engine.begin_step();
      engine.begin_backward(true);
      model.forward(engine, batch.inputs.data() + r * T, batch.targets.data() + r * T, true,
                    {cfg.run.seed, uint64_t(kStep), uint64_t(r)});
      model.backward(engine, 1.0f / float(N * T));
      engine.finish_gradients();
      // bf16 gradients too are summed in one order by every ZeRO stage: the norm is DP's, bit for bit.
      const double gnorm = engine.grad_norm();
      CHECK(gnorm > 0);
      if (L.index == 0)
        dp_gnorm = gnorm;
      else if (!hybrid)
        CHECK(gnorm == dp_gnorm);
      engine.optimizer_step(kStep, kLr, 1.0);
      check_ledger("after one step");
      // Transient weights: ZeRO-3/hybrid gather a unit just in time and prefetch the next one (C15), so the
      // param peak rises by at most two adjacent units (bf16, the last one with the padding); the other
      // strategies never allocate weights during a step.
      const uint64_t rise = ledger.peak(Mem::param) - ledger.current(Mem::param);
      if (L.index >= 3) {
        const ShardLayout& sh = engine.shards();
        auto unit_size = [&](int u) {
          return (u == layout.units() - 1 ? sh.padded() : layout.unit_end(u)) - layout.unit_begin(u);
        };
        uint64_t two_units = 0;
        for (int u = 0; u + 1 < layout.units(); ++u)
          two_units = std::max<uint64_t>(two_units, unit_size(u) + unit_size(u + 1));
        CHECK(rise > 0);
        CHECK(rise <= two_units * sizeof(bf16));
      } else {
        CHECK(rise == 0);
      }
    }
  }
}
