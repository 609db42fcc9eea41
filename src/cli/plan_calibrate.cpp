// `shardlab plan --calibrate [--run DIR | model flags] --out rates.json`, under `scripts/mpirun.sh -np 2`: this
// machine's rates for `plan --predict --rates` (plan/step_time.h's StepRates), each measured and printed with how:
//   gpu_flops    the trainer's own effective rate on one rank: DIR is a finished 1-rank run (`shardlab train --out
//                DIR`); its FLOPs per step by the planner's formula (plan/rank_prediction.h, the same as a prediction
//                counts) ÷ the median step wall time of loss.csv (column ms, the first step left out: it warms the
//                caches), less the update (below). Elementwise work and the loss are in the time, so the rate is below
//                the GEMM rate; the GEMM FLOPs the run counted (ledger.json, core/flops.h) and the core's FMA peak
//                (core/fma_peak.h) are printed beside it. Without --run, rank 0 times the trainer's own step in-process
//                instead (train/step_timer.h, `bench`'s: one micro-batch of random tokens per step, forward, backward,
//                AdamW; --steps after one warm-up) for the model of the model flags, at the same formula's FLOPs.
//   busy cores   a layout of 2 or more ranks keeps both cores busy, and two busy cores share caches and memory: the
//                model's step timed in-process (5 steps) by rank 0 alone, then by both ranks at once under naive and
//                under flash attention, 3 rounds alternating, medians; the measured rate × (flash ÷ naive at once, for
//                the other kernel) × (at once ÷ alone, at most 1) gives gpu_flops (naive attention) and
//                gpu_flops_flash. "alone" keeps both kernels' rates with the other core idle, for 1-rank layouts.
//   update       seconds per parameter of the step's per-parameter work (zero and fold the gradients, their norm,
//                AdamW; train/step_timer.h's time_update_steps, 20 times on the model's own states, both ranks at
//                once): ZeRO divides it among the ranks (zeroing every gradient is in it too: an approximation), DP
//                does not. It is taken out of the step before the FLOP rate above is worked out, so gpu_flops is
//                forward and backward alone.
//   β, α         hand-written ring all-reduces (comm/) of f32 buffers from 1 KB to 4 MB between the ranks, each
//                size's median of 9 repeats, the slowest rank's; a least-squares line (relative errors)
//                time = messages·α + bytes sent/β over the sizes (messages 2(n−1), bytes 2(n−1)/n of the buffer).
// Exit 0, 2 on bad input (not 2 ranks, a missing or multi-rank run, a model to time that the trainer refuses).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include <nlohmann/json.hpp>

#include "check/ledger_read.h"
#include "cli/command.h"
#include "comm/communicator.h"
#include "core/fma_peak.h"
#include "io/json_file.h"
#include "io/loss_log.h"
#include "io/owned_files.h"
#include "plan/rank_prediction.h"
#include "plan/rates_file.h"
#include "train/memory_check.h"
#include "train/step_timer.h"

namespace shardlab {

namespace {
using u64 = std::uint64_t;

constexpr const char* kCalibrateBy = "plan --calibrate --out";

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

std::string shortest(double x) {
  char s[32];
  std::snprintf(s, sizeof s, "%g", x);
  return s;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct RunRate {
  double step_seconds = 0, formula_flops = 0, counted_flops = 0;  // counted_flops: 0 when not counted
  u64 steps = 0;
  TrainConfig model;  // the model and recipe timed, for the update's timing
  std::string from;   // the run directory, or what was timed in-process
};

// The planner's FLOPs of one step of cfg's model on one rank, one micro-batch per step (cfg.micro_batch).
double formula_flops(const TrainConfig& cfg) {
  const GPTConfig& m = cfg.model;
  plan::PredictSpec s;
  s.layers = u64(m.layers), s.hidden = u64(m.hidden), s.heads = u64(m.heads), s.seq = u64(m.seq);
  s.vocab = u64(m.vocab), s.micro_batch = s.global_batch = u64(cfg.micro_batch), s.world = 1;
  s.f64 = cfg.recipe.f64(), s.recompute = cfg.recompute, s.attention = cfg.attention;
  plan::StepRates unit;
  unit.gpu_flops = unit.gpu_flops_flash = 1;
  return plan::predict_layout(s, unit).ranks.at(0).flops;
}

// No run: the trainer's own step of cfg's model, one micro-batch per step, to be timed in-process. Throws one
// sentence on a configuration the trainer or the prediction refuses.
RunRate timed_rate(TrainConfig cfg) {
  cfg.global_batch = cfg.micro_batch;
  if (std::string err = validate_train_config(cfg); !err.empty()) throw std::runtime_error(err);
  if (cfg.recipe.bf16() || cfg.model.moe.on())
    throw std::runtime_error("the in-process timing takes a dense model in f32 or f64 (no --mixed, no experts)");
  if (std::string err = check_memory(cfg, 1, 0); !err.empty()) throw std::runtime_error(err);
  const GPTConfig& m = cfg.model;
  RunRate r;
  r.model = cfg;
  r.steps = u64(cfg.run.steps);
  r.formula_flops = formula_flops(cfg);  // the step is timed later, by rank 0 alone
  r.from = "timed in-process, L" + std::to_string(m.layers) + " H" + std::to_string(m.hidden) + " A" +
           std::to_string(m.heads) + " S" + std::to_string(m.seq) + " B" + std::to_string(cfg.micro_batch);
  return r;
}

// A finished 1-rank run: its median step time and FLOPs per step. Every file through the readers the other commands
// use (core/paths.h's checks: never a FIFO, a device or an endless file), every value checked before it is used: the
// configuration by the trainer's own reader and rules (config.json), the ledger's fields in range, every step time of
// loss.csv a positive number of milliseconds.
RunRate run_rate(const std::string& dir, bool force_memory) {
  nlohmann::json config = read_json_file(dir + "/config.json", size_t(16) << 20);
  if (config.is_object()) config.erase("run_id");  // the run's identity, not a setting
  RunRate r;
  try {
    r.model = TrainConfig::from_json(config);
  } catch (const std::exception& e) {
    throw std::runtime_error(dir + "/config.json is " + e.what());
  }
  if (std::string err = validate_train_config(r.model); !err.empty())
    throw std::runtime_error(dir + "/config.json is not a run the trainer would start: " + err);
  r.model.outputs.force_memory = force_memory;
  if (std::string err = check_memory(r.model, 1, 0); !err.empty()) throw std::runtime_error(err);
  const nlohmann::json j = read_json_file(dir + "/ledger.json");
  const std::string where = dir + "/ledger.json";
  if (plan::need_in(j, "world_size", where, 1, 1 << 20) != 1) throw std::runtime_error(dir + " is not a 1-rank run");
  r.steps = plan::need_in(plan::need(j, "layout", where), "steps", where + " layout", 1, u64(1) << 40);
  const double accum = double(r.model.global_batch / r.model.micro_batch);
  r.formula_flops = formula_flops(r.model) * accum;  // FLOPs scale with samples
  r.from = dir;
  const nlohmann::json& ranks = plan::need(j, "ranks", where);
  if (!ranks.is_array() || ranks.size() != 1) throw std::runtime_error(where + ": ranks is not one rank's record");
  const nlohmann::json& f = plan::need(ranks.at(0), "flops", where + " ranks[0]");
  double counted = 0;
  for (const char* k : {"block_forward", "block_backward", "block_recompute", "other"}) {
    const nlohmann::json& v = plan::need(f, k, where + " ranks[0].flops");
    if (!v.is_number() || !(v.get<double>() >= 0) || !std::isfinite(v.get<double>()))
      throw std::runtime_error(where + ": ranks[0].flops." + k + " is not a count of FLOPs (" + v.dump() + ")");
    counted += v.get<double>();
  }
  r.counted_flops = counted / double(r.steps);  // evaluation's forwards included: a little above training's
  const LossTable t = read_loss_csv(dir + "/loss.csv");
  if (!t.torn.empty()) std::fprintf(stderr, "shardlab plan --calibrate: warning: %s\n", t.torn.c_str());
  const int ms_col = t.column("ms");
  if (ms_col < 0) throw std::runtime_error(dir + "/loss.csv has no ms column");
  std::vector<double> ms;
  for (size_t i = 1; i < t.rows.size(); ++i) {  // the first step warms the caches
    const double x = t.rows[i][size_t(ms_col)];
    if (!(x > 0 && x < 1e9))
      throw std::runtime_error(dir + "/loss.csv: step " + std::to_string(int64_t(t.rows[i][0])) + "'s ms is " +
                               (std::isnan(x) ? std::string("empty or nan") : shortest(x)) +
                               ", not the milliseconds a step took");
    ms.push_back(x);
  }
  if (ms.size() < 3) throw std::runtime_error(dir + "/loss.csv: fewer than 4 steps to time");
  r.step_seconds = median(ms) / 1e3;
  return r;
}

struct RingFit {
  double alpha = 0, beta = 0;
  bool busy = false;                              // no line fitted: the times did not grow with the size
  std::vector<std::pair<double, double>> points;  // bytes sent per rank, seconds
};

RingFit fit_ring(Communicator& comm) {
  RingFit fit;
  const double n = comm.size(), messages = 2 * (n - 1);
  for (size_t elements : {256, 4096, 65536, 262144, 1048576}) {
    std::vector<float> buf(elements, 1.0f);
    std::vector<double> times;
    for (int rep = 0; rep < 9; ++rep) {
      comm.barrier();
      const double t0 = now_s();
      comm.all_reduce(buf.data(), elements);
      const double t = now_s() - t0;
      double slowest = 0;
      for (double x : comm.all_gather_value(t)) slowest = std::max(slowest, x);
      times.push_back(slowest);
    }
    fit.points.push_back({2 * (n - 1) / n * double(elements) * sizeof(float), median(times)});
  }
  // Weighted least squares, weights 1/time²: each size's relative error counts alike, so the small sizes fix α and the
  // large ones β (an unweighted fit lets the 4 MB point decide both).
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& [x, y] : fit.points) {
    const double w = 1 / (y * y);
    sw += w, sx += w * x, sy += w * y, sxx += w * x * x, sxy += w * x * y;
  }
  const double slope = (sw * sxy - sx * sy) / (sw * sxx - sx * sx), intercept = (sy - slope * sx) / sw;
  fit.beta = 1 / slope;
  fit.alpha = std::max(0.0, intercept / messages);
  if (!(slope > 0)) {  // the times did not grow with the size (a busy machine): β from the largest message alone
    const auto& [x_big, y_big] = fit.points.back();
    const auto& [x_small, y_small] = fit.points.front();
    fit.beta = x_big / y_big;
    fit.alpha = std::max(0.0, (y_small - x_small / fit.beta) / messages);
    fit.busy = true;
  }
  return fit;
}
}  // namespace

int plan_calibrate_command(const CommandArgs& args, const Runtime& rt) {
  bool calibrate = false;
  std::string run, out;
  Flags flags(
      "shardlab plan --calibrate",
      "This machine's rates for plan --predict / --search --rates: the trainer's FLOP rate from a finished 1-rank "
      "run (--run DIR) or, without it, from rank 0 timing the model's step in-process; the ring's β and α "
      "from all-reduces between the 2 ranks (run under scripts/mpirun.sh -np 2).");
  flags.flag("--calibrate", calibrate, "measure the rates");
  flags.add("--run", run, "DIR: a finished 1-rank `shardlab train --out DIR` run (its ledger.json and loss.csv)",
            "DIR");
  flags.add("--out", out, "FILE: the rates as JSON", "FILE");
  TrainConfig cfg;  // without --run: the model rank 0 times
  cfg.run.steps = 5;
  flags.group("Without --run: the model whose step rank 0 times in-process (bench's step)");
  add_bench_flags(flags, cfg);
  if (const int code = parse_command(flags, args, rt, "plan --calibrate"); code >= 0) return code;
  std::string problem;
  if (rt.size() != 2) problem = "run it under scripts/mpirun.sh -np 2 (the ring is timed between 2 ranks)";
  if (problem.empty() && !flags.given("--out")) problem = "--calibrate needs --out FILE";
  for (const std::string& a : args)  // with --run the model is the run's: a model flag would be ignored
    if (problem.empty() && !run.empty() && a.rfind("--", 0) == 0) {
      const std::string name = a.substr(0, a.find('='));
      if (name != "--calibrate" && name != "--run" && name != "--out" && name != "--force-memory")
        problem = "--run takes the model from the run: drop " + name;
    }
  // The output is never one of the inputs (the run's files), nor a file shardlab did not write as this command's.
  if (problem.empty() && rt.is_root())
    problem = output_file_problem(
        out, "--out", kCalibrateBy,
        run.empty() ? std::vector<std::string>{}
                    : std::vector<std::string>{run + "/config.json", run + "/ledger.json", run + "/loss.csv"});
  if (problem.empty() && cfg.run.steps < 1) problem = "--steps expects at least 1 step to time";
  RunRate rate;  // on every rank: the other rank times the same model beside rank 0
  if (problem.empty()) {
    try {
      rate = run.empty() ? timed_rate(cfg) : run_rate(run, cfg.outputs.force_memory);
    } catch (const std::exception& e) {
      problem = (run.empty() ? std::string("the model to time: ") : std::string("--run: ")) + e.what();
    }
  }
  problem = rt.agree(problem);
  if (!problem.empty()) {
    if (rt.is_root()) std::fprintf(stderr, "shardlab plan --calibrate: error: %s\n", problem.c_str());
    return 2;
  }
  CommLedger ledger;
  Communicator world = Communicator::world(&ledger, nullptr, {});
  const RingFit ring = fit_ring(world);
  // The update, both ranks at once (as every rank of a layout does it): seconds per parameter.
  world.barrier();
  const UpdateTiming update = time_update_steps(rate.model, 20);
  // In-process steps of the model: rank 0 alone (the other core idle, as in the 1-rank run), then both ranks at once
  // under each attention kernel. Two busy cores share caches and memory, and every layout here keeps them both busy.
  TrainConfig k = rate.model;
  k.global_batch = k.micro_batch, k.run.steps = 5;
  auto in_process = [&](AttentionKernel a) {
    k.attention = a;
    const double t = time_training_steps(k).seconds / k.run.steps;
    return formula_flops(k) / std::max(t - update.seconds, 0.5 * t);
  };
  // Three rounds, alternating (a drift of the machine's speed hits every kind alike), each kind's median.
  std::vector<double> alone_runs, naive_runs, flash_runs;
  for (int round = 0; round < 3; ++round) {
    world.barrier();
    if (rt.is_root()) {
      if (run.empty() && round == 0) rate.step_seconds = time_training_steps(rate.model).seconds / double(rate.steps);
      alone_runs.push_back(in_process(rate.model.attention));
    }
    world.barrier();
    naive_runs.push_back(in_process(AttentionKernel::naive));
    world.barrier();
    flash_runs.push_back(in_process(AttentionKernel::flash));
  }
  if (!rt.is_root()) return 0;
  const bool f64 = rate.model.recipe.f64();
  const FmaPeak peak = measure_fma_peak(f64);
  const double update_per_param = update.seconds / double(update.params);
  const double fwd_bwd_seconds = std::max(rate.step_seconds - update.seconds, 0.5 * rate.step_seconds);
  const double measured_flops = rate.formula_flops / fwd_bwd_seconds;
  // The measured rate (one rank, the other core idle, the run's kernel) carried to the other kernel by the ratio of
  // the two at once, and to both cores busy by the run's kernel at once ÷ alone (at most 1: a busy neighbour never
  // speeds a core up; above 1 is the clock's noise).
  const double alone = median(alone_runs), naive_rate = median(naive_runs), flash_rate = median(flash_runs);
  const double own = rate.model.attention == AttentionKernel::flash ? flash_rate : naive_rate;
  const double busy = std::min(1.0, own / alone);
  const double naive_alone = measured_flops * naive_rate / own, flash_alone = measured_flops * flash_rate / own;
  const double gpu_flops = naive_alone * busy, gpu_flops_flash = flash_alone * busy;
  std::printf(
      "update: zero, fold, norm and AdamW of %zu %s parameters, both ranks at once: %.3f ms (mean of 20) = %.2f ns "
      "per parameter\n",
      update.params, f64 ? "f64" : "f32", update.seconds * 1e3, update_per_param * 1e9);
  std::printf(
      "compute: %s, 1 rank: %.3g FLOPs per step (planner's formula) in %s %.2f ms over %llu steps %s, less the "
      "update's %.3f ms = %.2f GFLOP/s\n",
      rate.from.c_str(), rate.formula_flops, run.empty() ? "a mean" : "a median", rate.step_seconds * 1e3,
      (unsigned long long)rate.steps, run.empty() ? "(after one warm-up step)" : "(loss.csv ms, the first left out)",
      update.seconds * 1e3, measured_flops / 1e9);
  std::printf(
      "both cores busy, in-process on that model (medians of 3): rank 0 alone %.2f GFLOP/s (%s attention), both ranks "
      "at once naive %.2f, flash %.2f: so %.2f GFLOP/s (naive), %.2f (flash) per rank\n",
      alone / 1e9, attention_name(rate.model.attention), naive_rate / 1e9, flash_rate / 1e9, gpu_flops / 1e9,
      gpu_flops_flash / 1e9);
  if (run.empty())
    std::printf("  beside it: one core's %s FMA peak %.1f GFLOP/s\n", peak.isa.c_str(), peak.gflops);
  else
    std::printf(
        "  beside it: the GEMM FLOPs the run counted, %.3g per step (%.2f GFLOP/s); one core's %s FMA peak "
        "%.1f GFLOP/s\n",
        rate.counted_flops, rate.counted_flops / rate.step_seconds / 1e9, peak.isa.c_str(), peak.gflops);
  std::printf("ring all-reduce between 2 ranks (f32, median of 9, the slowest rank):\n");
  for (const auto& [bytes, s] : ring.points)
    std::printf("  %10.0f B sent   %9.1f µs   fit %9.1f µs\n", bytes, s * 1e6,
                (2 * ring.alpha + bytes / ring.beta) * 1e6);
  std::printf("  fit time = 2·α + bytes/β: β %.2f GB/s, α %.2f µs per message\n", ring.beta / 1e9, ring.alpha * 1e6);
  if (ring.busy)
    std::printf(
        "  (the times did not grow with the size — another job on these cores? β is the largest message's\n"
        "   bytes over its time, α what is left of the smallest one's)\n");
  nlohmann::json j = {{"gpu_flops", gpu_flops},
                      {"gpu_flops_flash", gpu_flops_flash},
                      {"alone", {{"gpu_flops", naive_alone}, {"gpu_flops_flash", flash_alone}}},
                      {"update_s_per_param", update_per_param},
                      {"bytes_per_s", ring.beta},
                      {"latency_s", ring.alpha},
                      {"how",
                       {{"run", rate.from},
                        {"step_seconds", rate.step_seconds},
                        {"update_seconds", update.seconds},
                        {"formula_flops_per_step", rate.formula_flops},
                        {"counted_flops_per_step", rate.counted_flops},
                        {"fma_peak_flops", peak.gflops * 1e9},
                        {"fma_isa", peak.isa},
                        {"ring_points", ring.points}}}};
  // What was measured is held to the bounds every reader of a rates file holds it to: a machine that measured
  // nonsense (a clock gone backwards, a step of 0 ms) gets one sentence and no file.
  plan::StepRates measured;
  measured.gpu_flops = gpu_flops, measured.gpu_flops_flash = gpu_flops_flash;
  measured.gpu_flops_alone = naive_alone, measured.gpu_flops_flash_alone = flash_alone;
  measured.intra_bytes_per_s = measured.inter_bytes_per_s = ring.beta, measured.latency_s = ring.alpha;
  measured.update_s_per_param = update_per_param;
  if (const std::string why = plan::rates_problem(measured); !why.empty()) {
    std::fprintf(stderr,
                 "shardlab plan --calibrate: error: the rates measured are not a machine's (%s); %s not written\n",
                 why.c_str(), out.c_str());
    return 1;
  }
  write_owned_file(out, j.dump(1) + "\n", false, kCalibrateBy);
  std::printf("wrote %s\n", out.c_str());
  return 0;
}

}  // namespace shardlab
