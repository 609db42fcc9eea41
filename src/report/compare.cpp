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
#include "io/json_file.h"
#include "io/loss_log.h"

namespace shardlab {

namespace {

std::string run_dtype(const std::string& dir) {
  const std::string path = dir + "/config.json";
  if (!input_file_problem(path).empty()) return "";
  const nlohmann::json j = parse_json_or_discarded(read_file(path, size_t(16) << 20));
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
  for (const LossTable* t : {&ref, &run})
    if (!t->torn.empty()) std::fprintf(stderr, "shardlab: warning: %s\n", t->torn.c_str());
  // Every number a step logged is compared, not the loss alone: a gradient norm or a validation loss can
  // differ where the loss does not (clipping hides a wrongly scaled gradient from the loss; evaluation runs
  // code training does not).
  // A model with experts adds its router's columns (train/moe_load.h): the same routing, the same numbers.
  const char* kColumns[] = {"loss", "grad_norm", "val_loss", "aux_loss", "z_loss", "imbalance", "dropped"};
  std::map<long, const std::vector<double>*> run_rows;
  for (const auto& row : run.rows) run_rows[std::lround(row[0])] = &row;
  struct Shared {
    long step;
    double ref, run, rel;  // the loss
    double worst;          // the largest rel diff of any column at this step
    const char* column;    // … in this column
  };
  struct Column {
    double worst = 0;
    long step = 0;
    size_t values = 0;
  };
  std::map<std::string, Column> columns;
  std::vector<Shared> shared;
  for (const auto& row : ref.rows) {
    auto it = run_rows.find(std::lround(row[0]));
    if (it == run_rows.end()) continue;
    const std::vector<double>& other = *it->second;
    Shared sh{it->first, 0, 0, 0, 0, "loss"};
    for (const char* name : kColumns) {
      const int a = ref.column(name), b = run.column(name);
      if (a < 0 || b < 0) continue;
      if (std::string(name) == "val_loss" && (std::isnan(row[a]) || std::isnan(other[b])))
        continue;  // not both evaluated
      const double rel = rel_diff(row[a], other[b]);
      Column& c = columns[name];
      ++c.values;
      if (!(rel <= c.worst)) c.worst = rel, c.step = sh.step;
      if (!(rel <= sh.worst)) sh.worst = rel, sh.column = name;
      if (std::string(name) == "loss") sh.ref = row[a], sh.run = other[b], sh.rel = rel;
    }
    shared.push_back(sh);
  }
  if (shared.empty())
    throw std::invalid_argument("the runs share no step: " + ref_dir + " has " + std::to_string(ref.rows.size()) +
                                " steps, " + run_dir + " has " + std::to_string(run.rows.size()));
  const size_t n = shared.size();
  size_t worst = 0, bad = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!(shared[i].worst <= shared[worst].worst)) worst = i;
    if (!(shared[i].worst <= rtol)) ++bad;
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
    // The rel diff column is the loss's; a step that fails on another column says which, and by how much.
    char why[64] = "";
    if (!(s.worst <= rtol))
      std::snprintf(why, sizeof why, std::string(s.column) == "loss" ? "  FAIL" : "  FAIL: %s %.3g", s.column, s.worst);
    std::printf("%6ld  %24.17g  %24.17g  %10.3g%s\n", s.step, s.ref, s.run, s.rel, why);
  }
  if (shown < n) std::printf("(%zu of %zu steps shown; --all shows every step)\n", shown, n);
  std::string per_column;
  for (const char* name : kColumns)
    if (columns.count(name)) {
      char part[96];
      std::snprintf(part, sizeof part, "%s%s %.3g", per_column.empty() ? "" : ", ", name, columns[name].worst);
      per_column += part;
      if (std::string(name) == "val_loss")
        per_column += " (" + std::to_string(columns[name].values) +
                      (columns[name].values == 1 ? " evaluation)" : " evaluations)");
    }
  std::printf("largest rel diff per column: %s\n", per_column.c_str());
  std::printf("max rel diff %.3g at step %ld (%s) over %zu steps; tolerance %.3g: %s\n", shared[worst].worst,
              shared[worst].step, shared[worst].column, n, rtol,
              bad ? "FAIL" : (shared[worst].worst == 0 ? "PASS (bit-identical)" : "PASS"));
  if (bad) std::printf("%zu step(s) past tolerance\n", bad);
  return bad ? 1 : 0;
}

}  // namespace shardlab
