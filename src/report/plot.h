// Line plots as standalone SVG files (no libraries): loss curves of one or more runs, each run's
// training curve solid and, for loss, its validation points dashed. `shardlab plot` draws runs
// together; the trainer writes DIR/loss.svg at the end of every run with --out.
#pragma once
#include <string>
#include <vector>

namespace shardlab {

struct Series {
  std::string label;
  std::vector<double> x, y;
  bool dashed = false;
  int color = 0;  // index into the palette
};

// Every picture shardlab draws says so in its first lines (for a reader; what shardlab may replace is
// decided by io/owned_files.h).
constexpr const char* kPlotMark = "<!-- drawn by shardlab -->";
// "" when `path` may receive a drawing: it does not exist, or shardlab drew it and it is unchanged
// (io/owned_files.h), and it is not one of `inputs`; else why not.
std::string plot_output_problem(const std::string& path, const std::vector<std::string>& inputs,
                                const std::string& flag = "--out");

std::string svg_line_plot(const std::vector<Series>& series, const std::string& title, const std::string& xlabel,
                          const std::string& ylabel);
// The loss curves of runs (their loss.csv) as an SVG document.
std::string plot_runs(const std::vector<std::string>& run_dirs, const std::string& metric);

}  // namespace shardlab
