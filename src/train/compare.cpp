// `shardlab compare REF RUN [--rtol X] [--all]`: the correctness check of every layout. Reads both
// runs' loss.csv, prints a per-step table of the two losses and their relative difference, the
// maximum, and exits 1 when any step is past the tolerance (default 1e-12 when both runs are f64,
// else 1e-5; --rtol 0 demands bit-identical losses). Steps must match one for one.
#include "train/compare.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "train/loss_log.h"

namespace shardlab {

namespace {

std::string run_dtype(const std::string& dir) {
  std::ifstream f(dir + "/config.json");
  if (!f) return "";
  nlohmann::json j = nlohmann::json::parse(f, nullptr, false);
  return j.is_object() && j.contains("dtype") ? j["dtype"].get<std::string>() : "";
}

double rel_diff(double a, double b) {
  if (a == b) return 0.0;
  if (std::isnan(a) || std::isnan(b)) return INFINITY;
  return std::fabs(a - b) / std::max(std::fabs(a), 1e-300);
}

}  // namespace

int compare_main(const std::vector<std::string>& args) {
  std::vector<std::string> dirs;
  double rtol = -1;
  bool all = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--rtol" && i + 1 < args.size()) {
      char* end = nullptr;
      rtol = std::strtod(args[++i].c_str(), &end);
      if (*end || rtol < 0) throw std::invalid_argument("--rtol expects a number ≥ 0, got '" + args[i] + "'");
    } else if (args[i] == "--all") {
      all = true;
    } else if (args[i].rfind("--", 0) == 0) {
      throw std::invalid_argument("unknown flag " + args[i] + " (usage: shardlab compare REF_DIR RUN_DIR [--rtol X] [--all])");
    } else {
      dirs.push_back(args[i]);
    }
  }
  if (dirs.size() != 2) throw std::invalid_argument("usage: shardlab compare REF_DIR RUN_DIR [--rtol X] [--all]");
  if (rtol < 0) rtol = (run_dtype(dirs[0]) == "f64" && run_dtype(dirs[1]) == "f64") ? 1e-12 : 1e-5;

  LossTable ref = read_loss_csv(dirs[0] + "/loss.csv"), run = read_loss_csv(dirs[1] + "/loss.csv");
  if (ref.rows.empty()) throw std::invalid_argument(dirs[0] + "/loss.csv has no steps");
  if (ref.rows.size() != run.rows.size())
    throw std::invalid_argument("the runs have different step counts: " + std::to_string(ref.rows.size()) + " in " +
                                dirs[0] + ", " + std::to_string(run.rows.size()) + " in " + dirs[1]);
  const int lc = ref.column("loss"), rc = run.column("loss");
  size_t n = ref.rows.size(), worst = 0, bad = 0;
  std::vector<double> rel(n);
  for (size_t i = 0; i < n; ++i) {
    if (ref.rows[i][0] != run.rows[i][0])
      throw std::invalid_argument("row " + std::to_string(i + 1) + " is step " + std::to_string(int(ref.rows[i][0])) +
                                  " in REF but step " + std::to_string(int(run.rows[i][0])) + " in RUN");
    rel[i] = rel_diff(ref.rows[i][lc], run.rows[i][rc]);
    if (rel[i] > rel[worst]) worst = i;
    if (!(rel[i] <= rtol)) ++bad;
  }
  const size_t shown = all ? n : std::min<size_t>(n, 25);
  std::printf("%6s  %24s  %24s  %10s\n", "step", ("loss " + dirs[0]).substr(0, 24).c_str(),
              ("loss " + dirs[1]).substr(0, 24).c_str(), "rel diff");
  size_t last = static_cast<size_t>(-1);
  for (size_t k = 0; k < shown; ++k) {
    size_t i = shown == n ? k : k * (n - 1) / (shown - 1);
    if (i == last) continue;
    last = i;
    std::printf("%6d  %24.17g  %24.17g  %10.3g%s\n", int(ref.rows[i][0]), ref.rows[i][lc], run.rows[i][rc], rel[i],
                rel[i] <= rtol ? "" : "  FAIL");
  }
  if (shown < n) std::printf("(%zu of %zu steps shown; --all shows every step)\n", shown, n);
  std::printf("max rel diff %.3g at step %d over %zu steps; tolerance %.3g: %s\n", rel[worst], int(ref.rows[worst][0]),
              n, rtol, bad ? "FAIL" : (rel[worst] == 0 ? "PASS (bit-identical)" : "PASS"));
  if (bad) std::printf("%zu step(s) past tolerance\n", bad);
  return bad ? 1 : 0;
}

}  // namespace shardlab
