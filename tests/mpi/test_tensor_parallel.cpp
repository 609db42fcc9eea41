// Tensor and sequence parallelism on real ranks (parallel/tensor_parallel.h, claims C17, C23), at every
// world size divisible by t ∈ {2, 4} (the other ranks are data parallel: each dp group its own samples;
// t's cases are skipped where t does not divide the world):
//  - the f/g seams of TensorParallelRegions against the math they stand for, exactly (integer-valued f64
//    inputs, sums formed here in member order): without SP enter/leave_backward/region_input are the
//    identity and leave/enter_backward the all-reduce; with SP enter/leave_backward/region_input the
//    all-gather along s and leave/enter_backward the reduce-scatter along s, with the (B, T, C) packing
//    (B = 1 and 3); inputs carry the dp coordinate, so a tp group that reached across dp groups would show;
//  - the vocabulary-parallel LM head (V/t rows of lm_head per rank) with Megatron's parallel cross-entropy
//    against the unsharded head in f64, with and without SP: the loss (summed over tp under SP, each rank
//    its own positions), every rank's probability slice (the columns of the whole softmax), the weight
//    gradient slice (rows of the whole one), the input gradient after head_input_backward (the whole one,
//    SP: this rank's rows) — |Δ| ≤ 1e-12 · max|tensor| — and the "vocab" purpose's ring bytes per call;
//  - the whole model's gradients in f64 with dropout on: one process over the whole layout (FlatAccess) vs
//    the tp-sliced model on the tp group (ModelChunk with the TensorParallelRegions hooks and its slice;
//    with SP the replicated tensors' gradients all-reduced over tp as the engine does), at tp = 1
//    (bit-identical), 2 and 4, with and without SP, for naive, flash + full recompute and selective
//    recompute: every rank's gradients placed with place_slices into whole tensors and compared element by
//    element (|Δ| ≤ 1e-12 · max|tensor|), the replicated gradients equal on every tp rank, the loss too;
//  - the same through the DataParallel engine as the trainer drives it (TrainConfig with tp and
//    sequence_parallel, dp = world / t, 2 micro-batches per rank; DP, ZeRO-1, ZeRO-2 and ZeRO-3): loss, gradient
//    norm and every gradient element whose final sum this rank holds (its slice under DP, its dp shard of
//    it under ZeRO) against one process over the whole global batch.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "../common/worst.h"
#include "comm/process_grid.h"
#include "core/rng.h"
#include "helpers.h"
#include "model/activation_policy.h"
#include "model/cross_entropy.h"
#include "model/linear.h"
#include "model/model_chunk.h"
#include "model/param_layout.h"
#include "parallel/data_parallel.h"
#include "parallel/tensor_parallel.h"
#include "train/train_config.h"

using namespace shardlab;
using namespace shardlab::test;

namespace {

constexpr double kRtol = 1e-12;
constexpr uint64_t kSeed = 99;
constexpr uint64_t kStep = 3;

// ------------------------------------------------------------------------------------------ f/g seams

// Member m's value at (b, s, c) of a (B, T, C) tensor: a small integer, so every sum over ≤ 4 members is
// exact; dp group g adds 1000·g (a tp group must only ever sum its own members).
double val(int m, int g, int salt, int b, int s, int c) {
  return double((m + 1) * ((b * 31 + s * 7 + c * 3 + salt) % 11 - 5) + m + 1000 * g);
}
double sum_val(int t, int g, int salt, int b, int s, int c) {
  double v = 0;
  for (int m = 0; m < t; ++m) v += val(m, g, salt, b, s, c);
  return v;
}

// (B, rows, C) filled with f(b, s, c), s = first_pos + local row.
template <class F>
std::vector<double> tensor(int B, int rows, int C, int first_pos, F f) {
  std::vector<double> v(size_t(B) * rows * C);
  for (int b = 0; b < B; ++b)
    for (int s = 0; s < rows; ++s)
      for (int c = 0; c < C; ++c) v[(size_t(b) * rows + s) * C + c] = f(b, first_pos + s, c);
  return v;
}

// Elements of [0, n) where a and b differ (bitwise).
size_t differ(const double* a, const double* b, size_t n) { return mismatches(a, b, 0, n); }

void check_seams(Communicator& tp, int g, bool sp, int B) {
  const int t = tp.size(), r = tp.rank(), T = 8, C = 5, Tl = sp ? T / t : T, t0 = sp ? r * Tl : 0;
  INFO("t = " << t << ", tp rank " << r << ", sequence parallel " << sp << ", B = " << B);
  MemoryLedger ledger;
  TensorParallelRegions<double> regions(tp, sp, size_t(B) * T, C, ledger);
  BlockDims d;
  d.B = B;
  d.T = T;
  d.C = C;
  d.heads_total = t;
  d.NH = 1;
  d.HD = 1;
  d.F = 4;
  d.T_local = Tl;
  d.first_head = r;
  d.T_ctx = T;
  d.first_row = t0;
  const size_t R = d.rows() * C, N = d.region_rows() * C;  // residual and region elements
  REQUIRE(N == size_t(B) * T * C);
  REQUIRE(R == size_t(B) * Tl * C);
  const double unset = -12345.0;

  // A residual-rows input of this rank (its positions), and the whole sequence of every member's.
  auto mine = [&](int salt) {
    return tensor(B, Tl, C, t0, [&](int b, int s, int c) { return val(r, g, salt, b, s, c); });
  };
  // The all-gather along s: position s comes from the member holding it.
  auto gathered = [&](int salt) {
    return tensor(B, T, C, 0, [&](int b, int s, int c) { return val(s / Tl, g, salt, b, s, c); });
  };
  // The region's partial sums of this rank (whole sequence) and their sum over members at my positions.
  auto partial = [&](int salt) {
    return tensor(B, T, C, 0, [&](int b, int s, int c) { return val(r, g, salt, b, s, c); });
  };
  auto summed = [&](int salt) {
    return tensor(B, Tl, C, t0, [&](int b, int s, int c) { return sum_val(t, g, salt, b, s, c); });
  };

  // enter (f forward), leave_backward (g backward), region_input: identity, or all-gather along s.
  struct Gatherer {
    const char* name;
    int salt;
  };
  for (const Gatherer& k : {Gatherer{"enter", 1}, Gatherer{"leave_backward", 2}, Gatherer{"region_input", 3}}) {
    INFO(k.name);
    const std::vector<double> x = mine(k.salt);
    std::vector<double> full(N, unset);
    const double* out = std::string(k.name) == "enter"            ? regions.enter(x.data(), full.data(), d)
                        : std::string(k.name) == "leave_backward" ? regions.leave_backward(x.data(), full.data(), d)
                                                                  : regions.region_input(x.data(), full.data(), d);
    if (!sp) {
      CHECK(out == x.data());  // f forward / g backward: the identity, no copy
      CHECK(std::count(full.begin(), full.end(), unset) == std::ptrdiff_t(N));
    } else {
      CHECK(out == full.data());
      const std::vector<double> want = gathered(k.salt);
      CHECK(differ(out, want.data(), N) == 0);
    }
  }

  // leave (g forward): all-reduce of the partial sums, or their reduce-scatter along s.
  {
    INFO("leave, separate output");
    std::vector<double> p = partial(4), y(R, unset);
    regions.leave(p.data(), y.data(), d);
    const std::vector<double> want = summed(4);
    CHECK(differ(y.data(), want.data(), R) == 0);
  }
  if (!sp) {
    INFO("leave, in place");
    std::vector<double> p = partial(5);
    regions.leave(p.data(), p.data(), d);
    const std::vector<double> want = summed(5);
    CHECK(differ(p.data(), want.data(), R) == 0);
  }
  // enter_backward (f backward): in place, the all-reduce, or the reduce-scatter into the first R elements.
  {
    INFO("enter_backward");
    std::vector<double> dfull = partial(6);
    const double* out = regions.enter_backward(dfull.data(), d);
    CHECK(out == dfull.data());
    const std::vector<double> want = summed(6);
    CHECK(differ(out, want.data(), R) == 0);
  }
}

// ------------------------------------------------------------------------------ vocabulary-parallel head

// Largest |a[i] - b[i]| relative to max |b|.
double rel_diff(const double* a, const double* b, size_t n) {
  double d = 0, m = 0;
  for (size_t i = 0; i < n; ++i) {
    d = test::worst_of(d, std::fabs(a[i] - b[i]));
    m = test::worst_of(m, std::fabs(b[i]));
  }
  return m > 0 ? d / m : d;
}

void check_vocab_head(Communicator& tp, bool sp) {
  const int t = tp.size(), r = tp.rank(), B = 2, T = 8, C = 6, V = 24, Vl = V / t, v0 = r * Vl;
  const int N = B * T, Tl = sp ? T / t : T, t0 = sp ? r * Tl : 0, R = B * Tl;
  const double scale = 1.0 / N;
  INFO("t = " << t << ", tp rank " << r << ", sequence parallel " << sp);
  CommLedger comm;
  tp.set_ledger(&comm);
  // The whole problem, the same on every rank: the head's input X (N, C), lm_head W (V, C), targets.
  std::vector<double> X(size_t(N) * C), W(size_t(V) * C);
  for (size_t i = 0; i < X.size(); ++i) X[i] = std::sin(0.37 * double(i) + 0.1);
  for (size_t i = 0; i < W.size(); ++i) W[i] = 0.8 * std::cos(0.53 * double(i) + 0.2);
  std::vector<int32_t> targets(N);
  for (int n = 0; n < N; ++n) targets[n] = (n * 7 + 3) % V;  // every slice owns some targets
  // Unsharded: logits, softmax cross-entropy, its backward, the two GEMM gradients.
  std::vector<double> probs(size_t(N) * V), dX(size_t(N) * C), dW(size_t(V) * C, 0.0);
  linear_forward(probs.data(), X.data(), W.data(), static_cast<const double*>(nullptr), N, C, V);
  const double loss = cross_entropy_forward(probs.data(), targets.data(), N, V);
  const std::vector<double> whole_probs = probs;
  cross_entropy_backward(probs.data(), targets.data(), N, V, scale);
  linear_backward(dX.data(), dW.data(), static_cast<double*>(nullptr), probs.data(), X.data(), W.data(), N, C, V);

  // Sharded: this rank's rows of W, its residual rows of X (SP: its positions), the seams of the regions.
  MemoryLedger ledger;
  TensorParallelRegions<double> regions(tp, sp, size_t(N), C, ledger);
  BlockDims d;
  d.B = B;
  d.T = T;
  d.C = C;
  d.T_local = Tl;
  d.T_ctx = T;
  d.first_row = t0;
  std::vector<double> Wl(W.begin() + size_t(v0) * C, W.begin() + size_t(v0 + Vl) * C), x_local(size_t(R) * C);
  for (int b = 0; b < B; ++b)
    std::memcpy(&x_local[size_t(b) * Tl * C], &X[(size_t(b) * T + t0) * C], sizeof(double) * Tl * C);
  std::vector<double> full(size_t(N) * C), p(size_t(N) * Vl), stats(3 * size_t(N)), dXl(size_t(N) * C);
  std::vector<double> dWl(size_t(Vl) * C, 0.0);
  const double* in = regions.head_input(x_local.data(), full.data(), d);
  REQUIRE(differ(in, X.data(), size_t(N) * C) == 0);  // f: the same X; SP: X gathered along s, exactly
  linear_forward(p.data(), in, Wl.data(), static_cast<const double*>(nullptr), N, C, Vl);
  double mine = vocab_parallel_cross_entropy_forward(
      p.data(), targets.data(), N, Vl, v0, stats.data(), [&](double* x, size_t n) { regions.vocab_max(x, n); },
      [&](double* x, size_t n) { regions.vocab_sum(x, n); },
      [&](int n) { return !sp || (n % T >= t0 && n % T < t0 + Tl); });
  double sharded_loss = mine;
  if (sp) {  // each rank its own positions' loss: summed over tp, as the engine does
    sharded_loss = 0;
    for (double v : tp.all_gather_value(mine)) sharded_loss += v;
  }
  CHECK(std::fabs(sharded_loss - loss) <= kRtol * std::fabs(loss));
  // Forward: the probability slice is the whole softmax's columns [v0, v0 + Vl).
  std::vector<double> want_p(size_t(N) * Vl);
  for (int n = 0; n < N; ++n)
    std::memcpy(&want_p[size_t(n) * Vl], &whole_probs[size_t(n) * V + v0], sizeof(double) * Vl);
  CHECK(rel_diff(p.data(), want_p.data(), want_p.size()) <= kRtol);
  // Backward: d_logits slice, the weight gradient slice (no communication), the input gradient summed.
  vocab_parallel_cross_entropy_backward(p.data(), targets.data(), N, Vl, v0, scale);
  const double* in2 = regions.head_input(x_local.data(), full.data(), d);  // SP: gathered again
  linear_backward(dXl.data(), dWl.data(), static_cast<double*>(nullptr), p.data(), in2, Wl.data(), N, C, Vl);
  const std::vector<double> want_dW(dW.begin() + size_t(v0) * C, dW.begin() + size_t(v0 + Vl) * C);
  CHECK(rel_diff(dWl.data(), want_dW.data(), want_dW.size()) <= kRtol);
  regions.head_input_backward(dXl.data(), d);
  std::vector<double> want_dX(size_t(R) * C);
  for (int b = 0; b < B; ++b)
    std::memcpy(&want_dX[size_t(b) * Tl * C], &dX[(size_t(b) * T + t0) * C], sizeof(double) * Tl * C);
  CHECK(rel_diff(dXl.data(), want_dX.data(), want_dX.size()) <= kRtol);
  // The tp traffic, all of it under purpose "vocab": 3 all-reduces of N values, then f's all-reduce of
  // N·C (SP: 2 all-gathers + 1 reduce-scatter of it) — ring bytes per rank, as plan/tp_bytes.h.
  const uint64_t e = sizeof(double), ar_rows = 2 * uint64_t(N) * (t - 1) / t;  // N divisible by t here
  const uint64_t nc = uint64_t(N) * C, head = sp ? 3 * nc * (t - 1) / t : 2 * nc * (t - 1) / t;
  uint64_t sent = 0;
  for (const CommCall& c : comm.calls())
    if (c.purpose == "vocab") sent += c.sent();
  CHECK(sent == (3 * ar_rows + head) * e);
  tp.set_ledger(nullptr);
}

}  // namespace

TEST_CASE("tensor parallel: the vocabulary-parallel head and parallel cross-entropy equal the unsharded head (f64)",
          "[tensor_parallel][vocab]") {
  const int W = world_size();
  for (int t : {2, 4}) {
    if (W % t != 0) continue;  // this t does not fit the world
    ProcessGrid grid(GridSizes{0, t, 1, 1, 1}, 0, nullptr, nullptr, CommImpl::ring);
    for (bool sp : {false, true}) check_vocab_head(grid.comm(Axis::tp), sp);
  }
}

namespace {

// ------------------------------------------------------------------------------------------ gradients

GPTConfig grad_config() {  // 4 heads of 8, 4C = 128, T = 16: t = 4 gives one head, 32 columns, 4 positions
  GPTConfig c;
  c.layers = 2;
  c.hidden = 32;
  c.heads = 4;
  c.seq = 16;
  c.vocab = 64;
  c.dropout = 0.1;
  return c;
}

// Global sample k: inputs and targets from the counter RNG (layout-free).
struct Batch {
  std::vector<int32_t> inputs, targets;  // (samples, T)
};
Batch make_batch(int first, int samples, const GPTConfig& cfg) {
  Batch b;
  const int T = cfg.seq;
  b.inputs.resize(size_t(samples) * T);
  b.targets.resize(size_t(samples) * T);
  const RngStream rng = rng_stream(kSeed, "test:tensor_parallel tokens", kStep);
  for (int k = 0; k < samples; ++k)
    for (int s = 0; s < T; ++s) {
      const uint64_t i = uint64_t(first + k) * (T + 1) + s;
      b.inputs[size_t(k) * T + s] = static_cast<int32_t>(rng.below(i, cfg.vocab));
      b.targets[size_t(k) * T + s] = static_cast<int32_t>(rng.below(i + 1, cfg.vocab));
    }
  return b;
}

// Whole weights off the symmetric init: biases and LayerNorms non-trivial too, so a row-parallel bias
// added once per rank (or a LayerNorm gain applied twice) would change the function.
std::vector<double> whole_params(const GPTConfig& cfg) {
  const ParamLayout whole(cfg);
  std::vector<double> p(whole.total());
  init_params(whole, cfg, kSeed, p.data(), 0, p.size());
  const RngStream rng = rng_stream(kSeed, "test:tensor_parallel perturb");
  for (size_t i = 0; i < p.size(); ++i) p[i] += 0.05 * rng.normal(i);
  return p;
}

// Local flat index → whole flat index, through the layout's own runs (test_param_slices.cpp checks them
// against the partition rules written out).
std::vector<size_t> whole_index(const ParamLayout& local, const ParamLayout& whole) {
  std::vector<size_t> m(local.total());
  for (const TensorSpec& t : local.tensors()) {
    const TensorSpec& w = whole.find(t.name);
    for_each_run(t, [&](size_t l, size_t g, size_t n) {
      for (size_t k = 0; k < n; ++k) m[t.offset + l + k] = w.offset + g + k;
    });
  }
  return m;
}

struct GradRun {
  double loss = 0;            // Σ of the token losses of the micro-batch
  std::vector<double> grads;  // whole layout
  size_t replicated_mismatch = 0;
};

const char* policy_name(const ActivationPolicy& p) {
  if (p.attention == AttentionKernel::flash) return p.recompute == Recompute::full ? "flash, full recompute" : "flash";
  return p.recompute == Recompute::selective ? "naive, selective recompute" : "naive";
}

// One process over the whole layout.
GradRun whole_run(const GPTConfig& cfg, const std::vector<double>& params, const Batch& batch, int B, int first,
                  ActivationPolicy policy) {
  const ParamLayout layout(cfg);
  MemoryLedger ledger;
  Buffer<double> P(ledger, Mem::param, layout.total()), G(ledger, Mem::grad, layout.total());
  std::memcpy(P.data(), params.data(), params.size() * sizeof(double));
  ModelChunk<double> chunk(cfg, layout, ChunkSpec::whole(cfg), B, policy, ledger);
  FlatAccess<double> access(layout, P.data(), G.data());
  GradRun out;
  out.loss = chunk.forward(
      MicroBatch{0, B, batch.inputs.data(), batch.targets.data(), {kSeed, kStep, uint64_t(first)}, true}, access);
  chunk.backward(0, access, 1.0 / (double(B) * cfg.seq));
  out.grads.assign(G.data(), G.data() + layout.total());
  return out;
}

// The tp-sliced model on this rank of the tp group; the whole gradient assembled from every rank's slices.
GradRun sliced_run(const GPTConfig& cfg, Communicator& tp, bool sp, const std::vector<double>& params,
                   const Batch& batch, int B, int first, ActivationPolicy policy) {
  const int t = tp.size(), r = tp.rank();
  const ModelSlice slice{t, r, sp};
  REQUIRE(slice.validate(cfg).empty());
  const ParamLayout whole(cfg), local(cfg, slice);
  const size_t L = local.total();
  const std::vector<size_t> to_whole = whole_index(local, whole);
  MemoryLedger ledger;
  Buffer<double> P(ledger, Mem::param, L), G(ledger, Mem::grad, L);
  for (size_t i = 0; i < L; ++i) P[i] = params[to_whole[i]];
  TensorParallelRegions<double> regions(tp, sp, size_t(B) * cfg.seq, cfg.hidden, ledger);
  ModelChunk<double> chunk(cfg, local, ChunkSpec::whole(cfg), B, policy, ledger, &regions, slice);
  FlatAccess<double> access(local, P.data(), G.data());
  const double loss = chunk.forward(
      MicroBatch{0, B, batch.inputs.data(), batch.targets.data(), {kSeed, kStep, uint64_t(first)}, true}, access);
  chunk.backward(0, access, 1.0 / (double(B) * cfg.seq));
  GradRun out;
  if (sp) {
    // Each rank's replicated tensors saw its positions only: one all-reduce over tp makes them whole
    // (what DataParallel::reduce_replicated_grads does), and each rank's loss covers its positions.
    std::vector<double> packed;
    for (const TensorSpec& s : local.tensors())
      if (s.replicated()) packed.insert(packed.end(), G.data() + s.offset, G.data() + s.offset + s.numel);
    tp.all_reduce(packed.data(), packed.size());
    size_t at = 0;
    for (const TensorSpec& s : local.tensors())
      if (s.replicated()) {
        std::memcpy(G.data() + s.offset, packed.data() + at, s.numel * sizeof(double));
        at += s.numel;
      }
    for (double v : tp.all_gather_value(loss)) out.loss += v;
  } else {
    out.loss = loss;  // every rank holds the whole loss
  }
  // Every rank's local gradients (the same size on every rank), then into their places in whole tensors.
  std::vector<double> all(L * t);
  std::memcpy(all.data() + L * r, G.data(), L * sizeof(double));
  tp.all_gather(all.data(), std::vector<size_t>(t, L));
  out.grads.assign(whole.total(), std::numeric_limits<double>::quiet_NaN());
  for (int q = 0; q < t; ++q)
    place_slices(ParamLayout(cfg, ModelSlice{t, q, sp}), reinterpret_cast<const unsigned char*>(all.data() + L * q),
                 whole, reinterpret_cast<unsigned char*>(out.grads.data()), sizeof(double));
  // The replicated tensors' gradients are the same on every tp rank (bit for bit).
  for (int q = 1; q < t; ++q)
    for (const TensorSpec& s : local.tensors())
      if (s.replicated())
        out.replicated_mismatch += differ(all.data() + L * q + s.offset, all.data() + s.offset, s.numel);
  return out;
}

// Element-by-element comparison with the whole gradient: |got - want| ≤ rtol · max|want over the tensor|
// (elements marked absent in `have` are skipped). Reports the worst tensor and the largest difference.
struct GradDiff {
  double worst = 0, max_abs = 0;
  size_t bad = 0, compared = 0, differing = 0;
  std::string where;
  std::string str() const {
    std::ostringstream o;
    o << "worst relative difference " << worst << " in " << where << ", max |diff| " << max_abs << "; " << bad << " of "
      << compared << " elements past tolerance, " << differing << " not bit-identical";
    return o.str();
  }
};
GradDiff grad_diff(const ParamLayout& whole, const std::vector<double>& got, const std::vector<double>& want,
                   double rtol, const std::vector<char>* have = nullptr) {
  GradDiff d;
  for (const TensorSpec& t : whole.tensors()) {
    double scale = 0;
    for (size_t i = t.offset; i < t.offset + t.numel; ++i) scale = test::worst_of(scale, std::fabs(want[i]));
    for (size_t i = t.offset; i < t.offset + t.numel; ++i) {
      if (have && !(*have)[i]) continue;
      const double diff = std::fabs(got[i] - want[i]);  // NaN (an element no rank placed) fails below
      ++d.compared;
      d.differing += std::memcmp(&got[i], &want[i], sizeof(double)) != 0;
      if (!(diff <= rtol * scale)) ++d.bad;
      if (!(diff <= d.max_abs)) d.max_abs = diff;
      const double rel = scale > 0 ? diff / scale : (diff == 0 ? 0 : std::numeric_limits<double>::infinity());
      if (!(rel <= d.worst)) {
        d.worst = rel;
        d.where = t.name;
      }
    }
  }
  return d;
}

bool close(double a, double b, double rtol) { return std::fabs(a - b) <= rtol * std::fabs(b); }

}  // namespace

TEST_CASE("tensor parallel: f/g seams are identity/all-reduce, SP's all-gather/reduce-scatter along s",
          "[tensor_parallel]") {
  const int W = world_size();
  for (int t : {2, 4}) {
    if (W % t != 0) continue;  // this t does not fit the world
    ProcessGrid grid(GridSizes{0, t, 1, 1, 1}, 0, nullptr, nullptr, CommImpl::ring);
    REQUIRE(grid.size(Axis::tp) == t);
    Communicator& tp = grid.comm(Axis::tp);
    REQUIRE(tp.rank() == grid.coord(Axis::tp));
    for (bool sp : {false, true})
      for (int B : {1, 3}) check_seams(tp, grid.coord(Axis::dp), sp, B);
  }
}

TEST_CASE("tensor parallel: whole-model gradients at tp = 1, 2, 4 equal one process (f64, dropout on)",
          "[tensor_parallel][tp_grads]") {
  const int W = world_size();
  const GPTConfig cfg = grad_config();
  const ParamLayout whole(cfg);
  const std::vector<double> params = whole_params(cfg);
  const int B = 2;
  const std::vector<ActivationPolicy> policies = {
      ActivationPolicy{},
      ActivationPolicy{false, Recompute::full, AttentionKernel::flash},
      ActivationPolicy{false, Recompute::selective, AttentionKernel::naive},
  };
  for (const ActivationPolicy& policy : policies) {
    // tp = 1: the local layout of a one-rank slice is the whole model, bit for bit.
    {
      const Batch batch = make_batch(0, B, cfg);
      const GradRun ref = whole_run(cfg, params, batch, B, 0, policy);
      const ParamLayout one(cfg, ModelSlice{1, 0});
      REQUIRE(one.total() == whole.total());
      MemoryLedger ledger;
      Buffer<double> P(ledger, Mem::param, one.total()), G(ledger, Mem::grad, one.total());
      std::memcpy(P.data(), params.data(), params.size() * sizeof(double));
      ModelChunk<double> chunk(cfg, one, ChunkSpec::whole(cfg), B, policy, ledger, nullptr, ModelSlice{1, 0});
      FlatAccess<double> access(one, P.data(), G.data());
      const double loss =
          chunk.forward(MicroBatch{0, B, batch.inputs.data(), batch.targets.data(), {kSeed, kStep, 0}, true}, access);
      chunk.backward(0, access, 1.0 / (double(B) * cfg.seq));
      INFO(policy_name(policy) << ", tp = 1");
      CHECK(loss == ref.loss);
      CHECK(differ(G.data(), ref.grads.data(), whole.total()) == 0);
    }
    for (int t : {2, 4}) {
      if (W % t != 0) continue;
      ProcessGrid grid(GridSizes{0, t, 1, 1, 1}, 0, nullptr, nullptr, CommImpl::ring);
      const int g = grid.coord(Axis::dp), first = g * B;  // each dp group its own samples
      const Batch batch = make_batch(first, B, cfg);
      const GradRun ref = whole_run(cfg, params, batch, B, first, policy);
      for (bool sp : {false, true}) {
        INFO(policy_name(policy) << ", tp = " << t << (sp ? " with sequence parallelism" : "") << ", tp rank "
                                 << grid.coord(Axis::tp) << ", dp group " << g);
        const GradRun s = sliced_run(cfg, grid.comm(Axis::tp), sp, params, batch, B, first, policy);
        INFO("loss " << s.loss << " vs one process " << ref.loss);
        CHECK(close(s.loss, ref.loss, kRtol));
        const GradDiff d = grad_diff(whole, s.grads, ref.grads, kRtol);
        INFO("gradient: " << d.str());
        CHECK(d.compared == whole.total());
        CHECK(d.bad == 0);
        CHECK(s.replicated_mismatch == 0);
      }
    }
  }
}

namespace {

// One optimizer step's gradients through the engine, as src/train/trainer.cpp drives it.
struct EngineRun {
  double loss = 0, gnorm = 0;
  std::vector<double> grads;  // whole layout, NaN where this rank holds nothing
  std::vector<char> have;
};
EngineRun engine_run(const TrainConfig& cfg, ProcessGrid& grid) {
  const int t = grid.size(Axis::tp), r = grid.coord(Axis::tp), dp = grid.size(Axis::dp), dp_rank = grid.coord(Axis::dp);
  const ParamLayout whole(cfg.model), local(cfg.model, cfg.slice(r));
  MemoryLedger ledger;
  Trace trace;
  DataParallel<double> engine(cfg.layout, cfg.recipe, cfg.optimizer, local, grid, ledger, trace);
  engine.states().init_weights(cfg.model, cfg.run.seed);
  std::unique_ptr<TensorParallelRegions<double>> regions;
  if (t > 1)
    regions = std::make_unique<TensorParallelRegions<double>>(grid.comm(Axis::tp), cfg.layout.sequence_parallel,
                                                              size_t(cfg.micro_batch) * cfg.model.seq, cfg.model.hidden,
                                                              ledger);
  ModelChunk<double> model(cfg.model, local, ChunkSpec::whole(cfg.model), cfg.micro_batch, ActivationPolicy{}, ledger,
                           regions.get(), cfg.slice(r));
  const int B = cfg.micro_batch, per_rank = cfg.global_batch / dp, accum = per_rank / B;
  const double tokens = double(cfg.global_batch) * cfg.model.seq;
  engine.begin_step();
  double local_loss = 0;
  for (int k = 0; k < accum; ++k) {
    const int first = dp_rank * per_rank + k * B;
    const Batch batch = make_batch(first, B, cfg.model);
    local_loss += model.forward(
        MicroBatch{k, B, batch.inputs.data(), batch.targets.data(), {cfg.run.seed, kStep, uint64_t(first)}, true},
        engine);
    engine.begin_backward(k == accum - 1);
    model.backward(k, engine, 1.0 / tokens);
  }
  engine.finish_gradients();
  EngineRun out;
  out.loss = engine.sums().over_ranks(local_loss) / tokens;
  out.gnorm = engine.grad_norm();
  // Where this rank's gradients hold the final sums — all of its slice under DP, its dp shard of it under
  // ZeRO (ZeRO-1 keeps a whole store, but only the shard is reduced) — put in their whole places.
  FlatStore<double>& G = engine.states().grads();
  const bool whole_store = engine.strategy() == Strategy::dp;
  const size_t lo = std::max(G.begin(), whole_store ? size_t(0) : engine.shards().my_begin());
  const size_t hi = std::min({G.end(), whole_store ? G.end() : engine.shards().my_end(), local.total()});
  const std::vector<size_t> to_whole = whole_index(local, whole);
  out.grads.assign(whole.total(), std::numeric_limits<double>::quiet_NaN());
  out.have.assign(whole.total(), 0);
  for (size_t i = lo; i < hi; ++i) {
    out.grads[to_whole[i]] = *G.t(i);
    out.have[to_whole[i]] = 1;
  }
  return out;
}

}  // namespace

TEST_CASE("tensor parallel: the DataParallel engine with tp (+SP) gives one process's loss, norm and gradients",
          "[tensor_parallel][tp_engine]") {
  const int W = world_size();
  TrainConfig base;
  base.model = grad_config();
  base.micro_batch = 2;
  base.recipe.dtype = Dtype::f64;
  base.run.seed = kSeed;
  base.layout.bucket_mb = 0.05;  // several buckets
  for (int t : {2, 4}) {
    if (W % t != 0) continue;
    const int dp = W / t;
    base.global_batch = dp * 2 * base.micro_batch;  // two micro-batches per rank
    // One process over the whole global batch, from the same initial weights (the whole init).
    const ParamLayout whole(base.model);
    std::vector<double> init(whole.total());
    init_params(whole, base.model, base.run.seed, init.data(), 0, init.size());
    const Batch all = make_batch(0, base.global_batch, base.model);
    const GradRun ref = whole_run(base.model, init, all, base.global_batch, 0, ActivationPolicy{});
    double ref_norm = 0;
    for (double v : ref.grads) ref_norm += v * v;
    ref_norm = std::sqrt(ref_norm);
    const double ref_loss = ref.loss / (double(base.global_batch) * base.model.seq);
    ProcessGrid grid(GridSizes{0, t, 1, 1, 1}, 0, nullptr, nullptr, CommImpl::ring);
    for (bool sp : {false, true})
      for (int zero : {0, 1, 2, 3}) {
        TrainConfig cfg = base;
        cfg.layout.tp = t;
        cfg.layout.sequence_parallel = sp;
        cfg.layout.zero = zero;
        INFO("tp " << t << (sp ? " + SP" : "") << ", dp " << dp << ", zero " << zero << ", tp rank "
                   << grid.coord(Axis::tp) << ", dp rank " << grid.coord(Axis::dp));
        const EngineRun e = engine_run(cfg, grid);
        INFO("loss " << e.loss << " vs " << ref_loss << ", gradient norm " << e.gnorm << " vs " << ref_norm);
        CHECK(close(e.loss, ref_loss, kRtol));
        CHECK(close(e.gnorm, ref_norm, kRtol));
        const GradDiff d = grad_diff(whole, e.grads, ref.grads, kRtol, &e.have);
        INFO("gradient: " << d.str());
        CHECK(d.compared > 0);
        CHECK(d.bad == 0);
      }
  }
}
