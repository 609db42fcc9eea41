// Comparing two runs' loss curves (see compare.h).
#include "report/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/paths.h"
#include "io/loss_log.h"

namespace shardlab {

namespace {

std::string run_dtype(const std::string& dir) {
  const std::string path = dir + "/config.json";
  if (!input_file_problem(path).empty()) return "";
  nlohmann::json j = nlohmann::json::parse(read_file(path, size_t(16) << 20), nullptr, false);
  return j.is_object() && j.contains("dtype") && j["dtype"].is_string() ? j["dtype"].get<std::string>() : "";
}

double rel_diff(double a, double b) {
  if (a == b) return 0.0;
  if (std::isnan(a) || std::isnan(b)) return INFINITY;
  return std::fabs(a - b) / std::max(std::fabs(a), 1e-300);
}

}  // namespace

int compare_runs(const std::string& ref_dir, const std::string& run_dir, double rtol, bool all_steps) {
  if (rtol < 0) rtol = (run_dtype(ref_dir) == "f64" && run_dtype(run_dir) == "f64") ? 1e-12 : 1e-5;
  const LossTable ref = read_loss_csv(ref_dir + "/loss.csv"), run = read_loss_csv(run_dir + "/loss.csv");
  const int lc = ref.column("loss"), rc = run.column("loss");
  std::map<long, double> run_loss;
  for (const auto& row : run.rows) run_loss[std::lround(row[0])] = row[rc];
  struct Shared {
    long step;
    double ref, run, rel;
  };
  std::vector<Shared> shared;
  for (const auto& row : ref.rows) {
    auto it = run_loss.find(std::lround(row[0]));
    if (it != run_loss.end()) shared.push_back({it->first, row[lc], it->second, rel_diff(row[lc], it->second)});
  }
  if (shared.empty())
    throw std::invalid_argument("the runs share no step: " + ref_dir + " has " + std::to_string(ref.rows.size()) +
                                " steps, " + run_dir + " has " + std::to_string(run.rows.size()));
  const size_t n = shared.size();
  size_t worst = 0, bad = 0;
  for (size_t i = 0; i < n; ++i) {
    if (shared[i].rel > shared[worst].rel) worst = i;
    if (!(shared[i].rel <= rtol)) ++bad;
  }
  if (n != ref.rows.size() || n != run.rows.size())
    std::printf("comparing the %zu steps both runs logged (%ld..%ld): %zu in %s, %zu in %s\n", n, shared.front().step,
                shared.back().step, ref.rows.size(), ref_dir.c_str(), run.rows.size(), run_dir.c_str());
  const size_t shown = all_steps ? n : std::min<size_t>(n, 25);
  std::printf("%6s  %24s  %24s  %10s\n", "step", ("loss " + ref_dir).substr(0, 24).c_str(),
              ("loss " + run_dir).substr(0, 24).c_str(), "rel diff");
  size_t last = static_cast<size_t>(-1);
  for (size_t k = 0; k < shown; ++k) {
    const size_t i = shown == n ? k : k * (n - 1) / (shown - 1);
    if (i == last) continue;
    last = i;
    const Shared& s = shared[i];
    std::printf("%6ld  %24.17g  %24.17g  %10.3g%s\n", s.step, s.ref, s.run, s.rel, s.rel <= rtol ? "" : "  FAIL");
  }
  if (shown < n) std::printf("(%zu of %zu steps shown; --all shows every step)\n", shown, n);
  std::printf("max rel diff %.3g at step %ld over %zu steps; tolerance %.3g: %s\n", shared[worst].rel,
              shared[worst].step, n, rtol, bad ? "FAIL" : (shared[worst].rel == 0 ? "PASS (bit-identical)" : "PASS"));
  if (bad) std::printf("%zu step(s) past tolerance\n", bad);
  return bad ? 1 : 0;
}

}  // namespace shardlab
