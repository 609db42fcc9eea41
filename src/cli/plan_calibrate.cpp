// `shardlab plan --calibrate --run DIR --out rates.json`, under `scripts/mpirun.sh -np 2`: this machine's rates for
// `plan --predict --rates` (plan/step_time.h's StepRates), each measured and printed with how:
//   gpu_flops    the trainer's own effective rate on one rank: DIR is a finished 1-rank run (`shardlab train --out
//                DIR`); its FLOPs per step by the planner's formula (plan/rank_prediction.h, the same as a prediction
//                counts) ÷ the median step wall time of loss.csv (column ms, the first step left out: it warms the
//                caches). Elementwise work, the optimizer and the loss are in the time, so the rate is below the GEMM
//                rate; the GEMM FLOPs the run counted (ledger.json, core/flops.h) and the core's FMA peak
//                (core/fma_peak.h) are printed beside it.
//   β, α         hand-written ring all-reduces (comm/) of f32 buffers from 1 KB to 4 MB between the ranks, each
//                size's median of 9 repeats, the slowest rank's; a least-squares line (relative errors)
//                time = messages·α + bytes sent/β over the sizes (messages 2(n−1), bytes 2(n−1)/n of the buffer).
// Exit 0, 2 on bad input (not 2 ranks, a missing or multi-rank run).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "comm/communicator.h"
#include "core/fma_peak.h"
#include "io/files.h"
#include "plan/rank_prediction.h"

namespace shardlab {

namespace {
using u64 = std::uint64_t;

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct RunRate {
  double step_seconds = 0, formula_flops = 0, counted_flops = 0;
  u64 steps = 0;
  bool f64 = false;
};

// A finished 1-rank run: its median step time and FLOPs per step.
RunRate run_rate(const std::string& dir) {
  const nlohmann::json j = nlohmann::json::parse(read_all(dir + "/ledger.json"));
  if (j.at("world_size").get<int>() != 1) throw std::runtime_error(dir + " is not a 1-rank run");
  const nlohmann::json& a = j.at("model").at("activations");
  plan::PredictSpec s;
  s.layers = a.at("layers"), s.hidden = a.at("hidden"), s.heads = a.at("heads"), s.seq = a.at("seq");
  s.vocab = a.at("vocab"), s.micro_batch = a.at("micro_batch"), s.world = 1;
  s.f64 = j.at("model").at("dtype") == "f64";
  parse_recompute(a.at("recompute").get<std::string>(), &s.recompute);
  parse_attention_kernel(a.at("attention").get<std::string>(), &s.attention);
  const u64 accum = j.at("layout").at("accum");
  s.global_batch = accum * s.micro_batch;
  RunRate r;
  r.f64 = s.f64;
  r.steps = j.at("layout").at("steps");
  plan::StepRates unit;
  unit.gpu_flops = 1;
  r.formula_flops = plan::predict_layout(s, unit).ranks.at(0).flops;
  const nlohmann::json& f = j.at("ranks").at(0).at("flops");
  r.counted_flops = (f.at("block_forward").get<double>() + f.at("block_backward").get<double>() +
                     f.at("block_recompute").get<double>() + f.at("other").get<double>()) /
                    double(r.steps);  // evaluation's forwards included: a little above training's
  std::istringstream csv(read_all(dir + "/loss.csv"));
  std::string line;
  std::getline(csv, line);
  int ms_col = -1, col = 0;
  for (std::stringstream h(line); std::getline(h, line, ','); ++col)
    if (line == "ms") ms_col = col;
  if (ms_col < 0) throw std::runtime_error(dir + "/loss.csv has no ms column");
  std::vector<double> ms;
  for (bool first = true; std::getline(csv, line); first = false) {
    std::stringstream row(line);
    std::string cell;
    for (int c = 0; c <= ms_col && std::getline(row, cell, ','); ++c)
      if (c == ms_col && !first) ms.push_back(std::stod(cell));
  }
  if (ms.size() < 3) throw std::runtime_error(dir + "/loss.csv: fewer than 4 steps to time");
  r.step_seconds = median(ms) / 1e3;
  return r;
}

struct RingFit {
  double alpha = 0, beta = 0;
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
  return fit;
}
}  // namespace

int plan_calibrate_command(const CommandArgs& args, const Runtime& rt) {
  bool calibrate = false;
  std::string run, out;
  Flags flags("shardlab plan --calibrate",
              "This machine's rates for plan --predict --rates: the trainer's FLOP rate from a finished 1-rank run, "
              "the ring's β and α from all-reduces between the 2 ranks (run under scripts/mpirun.sh -np 2).");
  flags.flag("--calibrate", calibrate, "measure the rates");
  flags.add("--run", run, "DIR: a finished 1-rank `shardlab train --out DIR` run (its ledger.json and loss.csv)",
            "DIR");
  flags.add("--out", out, "FILE: the rates as JSON", "FILE");
  if (const int code = parse_command(flags, args, rt, "plan --calibrate"); code >= 0) return code;
  std::string problem;
  if (rt.size() != 2) problem = "run it under scripts/mpirun.sh -np 2 (the ring is timed between 2 ranks)";
  if (problem.empty() && (run.empty() || out.empty())) problem = "--calibrate needs --run DIR and --out FILE";
  RunRate rate;
  if (problem.empty() && rt.is_root()) {
    try {
      rate = run_rate(run);
    } catch (const std::exception& e) {
      problem = std::string("--run: ") + e.what();
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
  if (!rt.is_root()) return 0;
  const FmaPeak peak = measure_fma_peak(rate.f64);
  const double gpu_flops = rate.formula_flops / rate.step_seconds;
  std::printf(
      "compute: %s, 1 rank: %.3g FLOPs per step (planner's formula) in a median %.2f ms over %llu steps "
      "(loss.csv ms, the first left out) = %.2f GFLOP/s\n",
      run.c_str(), rate.formula_flops, rate.step_seconds * 1e3, (unsigned long long)rate.steps, gpu_flops / 1e9);
  std::printf(
      "  beside it: the GEMM FLOPs the run counted, %.3g per step (%.2f GFLOP/s); one core's %s FMA peak "
      "%.1f GFLOP/s\n",
      rate.counted_flops, rate.counted_flops / rate.step_seconds / 1e9, peak.isa.c_str(), peak.gflops);
  std::printf("ring all-reduce between 2 ranks (f32, median of 9, the slowest rank):\n");
  for (const auto& [bytes, s] : ring.points)
    std::printf("  %10.0f B sent   %9.1f µs   fit %9.1f µs\n", bytes, s * 1e6,
                (2 * ring.alpha + bytes / ring.beta) * 1e6);
  std::printf("  fit time = 2·α + bytes/β: β %.2f GB/s, α %.2f µs per message\n", ring.beta / 1e9, ring.alpha * 1e6);
  nlohmann::json j = {{"gpu_flops", gpu_flops},
                      {"bytes_per_s", ring.beta},
                      {"latency_s", ring.alpha},
                      {"how",
                       {{"run", run},
                        {"step_seconds", rate.step_seconds},
                        {"formula_flops_per_step", rate.formula_flops},
                        {"counted_flops_per_step", rate.counted_flops},
                        {"fma_peak_flops", peak.gflops * 1e9},
                        {"fma_isa", peak.isa},
                        {"ring_points", ring.points}}}};
  write_text_file_atomic(out, j.dump(1) + "\n");
  std::printf("wrote %s\n", out.c_str());
  return 0;
}

}  // namespace shardlab
