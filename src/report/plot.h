// Line plots as standalone SVG files (no libraries): loss curves of one or more runs, each run's
// training curve solid and, for loss, its validation loss dashed in a colour of its own with a marker at
// every evaluation. The legend sits in a band below the plot area (never over the data), wrapped to the
// picture's width; very long labels are shortened in the middle ("…"). `shardlab plot` draws runs
// together; the trainer writes DIR/loss.svg at the end of every run with --out.
#pragma once
#include <string>
#include <vector>

namespace shardlab {

struct Series {
  std::string label;
  std::vector<double> x, y;
  std::string color = "#1f77b4";
  bool dashed = false;
  bool markers = false;  // a circle at every point (few points: the evaluations of a run)
};

// Every picture shardlab draws says so in its first lines (for a reader; what shardlab may replace is
// decided by io/owned_files.h).
constexpr const char* kPlotMark = "<!-- drawn by shardlab -->";
// "" when `path` may receive a drawing: it does not exist, or shardlab drew it and it is unchanged
// (io/owned_files.h), and it is not one of `inputs`; else why not.
std::string plot_output_problem(const std::string& path, const std::vector<std::string>& inputs,
                                const std::string& flag = "--out");

// About n round tick values covering [lo, hi]: steps of 1, 2 or 5 × 10^k (also the schedule pictures' axes).
std::vector<double> round_ticks(double lo, double hi, int n);
// A label of at most max_chars characters (UTF-8 code points): a longer one keeps its start and its end
// around "…" (run names differ at either end).
std::string shorten_label(const std::string& label, size_t max_chars);
// The width a label takes in a sans-serif font of `font_px`, estimated generously (0.62 em a character) so
// that what is placed by it stays inside the picture.
double label_width(const std::string& label, double font_px);

std::string svg_line_plot(const std::vector<Series>& series, const std::string& title, const std::string& xlabel,
                          const std::string& ylabel);
// The loss curves of runs (their loss.csv) as an SVG document.
std::string plot_runs(const std::vector<std::string>& run_dirs, const std::string& metric);

}  // namespace shardlab
