// `shardlab bench [model flags] [--steps N]`: times N training steps (after one warm-up step) on
// random tokens and reports tokens/s and achieved model GFLOP/s, where model FLOPs per token =
// 6·N_matmul + 12·L·T·C (no causal discount) — beside OpenBLAS GEMM GFLOP/s (sgemm, or dgemm with
// --dtype f64) measured in the same process on the model's own largest GEMM shape (B·T × 4C × C) and on
// a square 1024³ product, and all of them as a share of this core's FMA peak, measured in the same process
// (core/fma_peak.h): a ratio to sgemm alone hides a slow GEMM kernel. Names the CPU and the GEMM kernel.
// Leaves out: multi-rank scaling.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <stdexcept>

#include "cli/command.h"
#include "core/blas_kernel.h"
#include "core/cpu_features.h"
#include "core/fma_peak.h"
#include "core/gemm.h"
#include "core/ledger.h"
#include "core/rng.h"
#include "model/gpt.h"
#include "optim/model_states.h"
#include "train/memory_check.h"
#include "train/step_timer.h"
#include "train/train_config.h"

namespace shardlab {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Best-of-3 GFLOP/s of C (M,N) = A (M,K) · B (K,N) in E (float: sgemm, double: dgemm).
template <class E>
double gemm_gflops(int M, int N, int K) {
  std::vector<E> A(size_t(M) * K), B(size_t(K) * N), C(size_t(M) * N);
  RngStream r = rng_stream(1, "bench");
  for (size_t i = 0; i < A.size(); ++i) A[i] = E(r.uniform(i));
  for (size_t i = 0; i < B.size(); ++i) B[i] = E(r.uniform(i + A.size()));
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    int iters = 0;
    auto t0 = std::chrono::steady_clock::now();
    do {
      gemm(false, false, M, N, K, E(1), A.data(), K, B.data(), N, E(0), C.data(), N);
      ++iters;
    } while (seconds_since(t0) < 0.3);
    best = std::max(best, 2.0 * M * N * K * iters / seconds_since(t0) / 1e9);
  }
  return best;
}
double gemm_gflops(bool f64, int M, int N, int K) {
  return f64 ? gemm_gflops<double>(M, N, K) : gemm_gflops<float>(M, N, K);
}

}  // namespace

int bench_command(const CommandArgs& args, const Runtime& rt) {
  TrainConfig cfg;
  cfg.run.steps = 5;
  Flags flags(
      "shardlab bench",
      "Training throughput (tokens/s, model GFLOP/s) against OpenBLAS's GEMM and the core's FMA peak, one rank.");
  add_bench_flags(flags, cfg);
  if (int rc = parse_command(flags, args, rt, "shardlab bench"); rc >= 0) return rc;
  if (!rt.is_root()) return 0;
  cfg.global_batch = cfg.micro_batch;
  if (std::string err = validate_train_config(cfg); !err.empty()) throw std::invalid_argument(err);
  if (std::string err = check_memory(cfg, 1, 0); !err.empty()) throw std::invalid_argument(err);
  const GPTConfig& m = cfg.model;
  const bool f64 = cfg.recipe.f64();
  const StepTiming t = time_training_steps(cfg);
  const double sec = t.seconds;
  ParamLayout layout(m);
  const int B = cfg.micro_batch, T = m.seq;
  const double tokens = double(cfg.run.steps) * B * T;
  const double flops_per_token = 6.0 * layout.matmul_params() + 12.0 * m.layers * T * m.hidden;
  const double model_gflops = flops_per_token * tokens / sec / 1e9;
  const double g_shape = gemm_gflops(f64, B * T, 4 * m.hidden, m.hidden), g_square = gemm_gflops(f64, 1024, 1024, 1024);
  const double best = std::max(g_shape, g_square);
  const char* gemm_name = f64 ? "dgemm" : "sgemm";
  const FmaPeak peak = measure_fma_peak(f64);
  auto of_peak = [&](double g) { return 100.0 * g / peak.gflops; };
  std::printf(
      "config L%d H%d A%d S%d B%d (%zu params, %s; model states %.0f B/param from the ledger; %s attention, "
      "recompute %s)\n",
      m.layers, m.hidden, m.heads, T, B, layout.total(),
      cfg.recipe.bf16() ? "mixed bf16" : dtype_name(cfg.recipe.dtype), double(t.model_state_bytes) / layout.total(),
      attention_name(cfg.attention), recompute_name(cfg.recompute));
  std::printf("  cpu         %s; %s build; %s\n", cpu_features().model.c_str(), build_arch().c_str(),
              blas_kernel().describe().c_str());
  std::printf("  fma peak    %7.2f GFLOP/s   (one core, %s, %d-bit %s multiply-adds on 12 registers, measured now)\n",
              peak.gflops, f64 ? "f64" : "f32", peak.vector_bits, peak.isa.c_str());
  std::printf(
      "  training    %9.0f tokens/s   %7.2f GFLOP/s = %.1f%% of peak   (%.1f ms/step over %d steps, %.2f "
      "MFLOP/token)\n",
      tokens / sec, model_gflops, of_peak(model_gflops), 1e3 * sec / cfg.run.steps, cfg.run.steps,
      flops_per_token / 1e6);
  std::printf(
      "  %s       %7.2f GFLOP/s = %.1f%% of peak on %d×%d×%d (the model's MLP shape), %.2f GFLOP/s = %.1f%% on "
      "1024³\n",
      gemm_name, g_shape, of_peak(g_shape), B * T, 4 * m.hidden, m.hidden, g_square, of_peak(g_square));
  std::printf("  ratio       training at %.1f%% of the best %s GFLOP/s and %.1f%% of the FMA peak\n",
              100.0 * model_gflops / best, gemm_name, of_peak(model_gflops));
  return 0;
}

}  // namespace shardlab
