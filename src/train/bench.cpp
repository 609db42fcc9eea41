// `shardlab bench [model flags] [--steps N]`: times N training steps (after one warm-up step) on
// random tokens and reports tokens/s and achieved model GFLOP/s, where model FLOPs per token =
// 6·N_matmul + 12·L·T·C (no causal discount) — beside OpenBLAS sgemm GFLOP/s measured in the same
// process on the model's own largest GEMM shape (B·T × 4C × C) and on a square 1024³ product.
// Reports ratio = model GFLOP/s / best sgemm GFLOP/s. Leaves out: multi-rank scaling.
#include "train/bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <stdexcept>

#include "core/gemm.h"
#include "core/ledger.h"
#include "core/rng.h"
#include "model/gpt.h"
#include "train/model_states.h"
#include "train/train_config.h"

namespace shardlab {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Best-of-3 GFLOP/s of C (M,N) = A (M,K) · B (K,N) in f32.
double sgemm_gflops(int M, int N, int K) {
  std::vector<float> A(size_t(M) * K), B(size_t(K) * N), C(size_t(M) * N);
  RngStream r = rng_stream(1, "bench");
  for (size_t i = 0; i < A.size(); ++i) A[i] = float(r.uniform(i));
  for (size_t i = 0; i < B.size(); ++i) B[i] = float(r.uniform(i + A.size()));
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    int iters = 0;
    auto t0 = std::chrono::steady_clock::now();
    do {
      gemm(false, false, M, N, K, 1.0f, A.data(), K, B.data(), N, 0.0f, C.data(), N);
      ++iters;
    } while (seconds_since(t0) < 0.3);
    best = std::max(best, 2.0 * M * N * K * iters / seconds_since(t0) / 1e9);
  }
  return best;
}

}  // namespace

int bench_main(const std::vector<std::string>& args) {
  TrainConfig cfg;
  cfg.steps = 5;
  std::string err = parse_train_args(args, cfg);
  cfg.global_batch = cfg.micro_batch;
  if (err.empty()) err = validate_train_config(cfg);
  if (!err.empty()) throw std::invalid_argument(err);
  const GPTConfig& m = cfg.model;
  ParamLayout layout(m);
  MemoryLedger ledger;
  ModelStates<float> states(cfg, layout, ledger);
  GPT<float> model(m, layout, cfg.micro_batch, ledger);
  const int B = cfg.micro_batch, T = m.seq;
  std::vector<int32_t> in(size_t(B) * T), tg(size_t(B) * T);
  RngStream r = rng_stream(cfg.seed, "bench-tokens");
  for (size_t i = 0; i < in.size(); ++i) { in[i] = int(r.below(2 * i, m.vocab)); tg[i] = int(r.below(2 * i + 1, m.vocab)); }
  const float scale = 1.0f / float(B * T);
  auto step = [&](int s) {
    states.zero_grads();
    model.forward(states.compute_params(), in.data(), tg.data(), true, {cfg.seed, uint64_t(s), 0});
    model.backward(states.backward_grads(), states.compute_params(), scale);
    states.end_micro_batch();
    states.grad_norm();
    states.optimizer_step(s, 1e-4, 1.0);
  };
  step(1);  // warm-up: page in every buffer
  auto t0 = std::chrono::steady_clock::now();
  for (int s = 2; s < 2 + cfg.steps; ++s) step(s);
  const double sec = seconds_since(t0);
  const double tokens = double(cfg.steps) * B * T;
  const double flops_per_token = 6.0 * layout.matmul_params() + 12.0 * m.layers * T * m.hidden;
  const double model_gflops = flops_per_token * tokens / sec / 1e9;
  const double g_shape = sgemm_gflops(B * T, 4 * m.hidden, m.hidden), g_square = sgemm_gflops(1024, 1024, 1024);
  const double best = std::max(g_shape, g_square);
  std::printf("config L%d H%d A%d S%d B%d (%zu params, %s)\n", m.layers, m.hidden, m.heads, T, B, layout.total(),
              cfg.mixed == "bf16" ? "mixed bf16" : cfg.dtype.c_str());
  std::printf("  training    %9.0f tokens/s   %7.2f GFLOP/s   (%.1f ms/step over %d steps, %.2f MFLOP/token)\n",
              tokens / sec, model_gflops, 1e3 * sec / cfg.steps, cfg.steps, flops_per_token / 1e6);
  std::printf("  sgemm       %7.2f GFLOP/s on %d×%d×%d (the model's MLP shape), %7.2f GFLOP/s on 1024³\n", g_shape,
              B * T, 4 * m.hidden, m.hidden, g_square);
  std::printf("  ratio       %.1f%% of the best sgemm GFLOP/s\n", 100.0 * model_gflops / best);
  return 0;
}

}  // namespace shardlab
