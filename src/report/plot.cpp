// SVG line plots (see plot.h): axes with round tick values, one polyline per series, a legend.
#include "report/plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "core/paths.h"
#include "io/loss_log.h"
#include "io/owned_files.h"

namespace shardlab {

namespace {

const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"};

// About n round tick values covering [lo, hi]: steps of 1, 2 or 5 × 10^k.
std::vector<double> ticks(double lo, double hi, int n) {
  const double raw = (hi - lo) / n, mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double step = raw / mag < 1.5 ? mag : raw / mag < 3.5 ? 2 * mag : raw / mag < 7.5 ? 5 * mag : 10 * mag;
  std::vector<double> t;
  for (double v = std::ceil(lo / step) * step; v <= hi + 1e-9 * step; v += step)
    t.push_back(std::fabs(v) < 1e-12 * step ? 0 : v);
  return t;
}

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

std::string escape(const std::string& s) {
  std::string o;
  for (char c : s) o += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : std::string(1, c);
  return o;
}

}  // namespace

std::string plot_output_problem(const std::string& path, const std::vector<std::string>& inputs,
                                const std::string& flag) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const std::string& in : inputs)
    if (fs::exists(in, ec) && fs::exists(path, ec) && fs::equivalent(in, path, ec))
      return "'" + path + "' is one of the inputs; give another " + flag;
  if (std::string why = owned_file_problem(path); !why.empty())
    return why + "; shardlab never replaces it: give another " + flag;
  if (fs::exists(path, ec) && read_file(path, size_t(64) << 20).substr(0, 512).find(kPlotMark) == std::string::npos)
    return "'" + path + "' is a file of shardlab's but not a picture it drew; give another " + flag;
  return "";
}

std::string svg_line_plot(const std::vector<Series>& series, const std::string& title, const std::string& xlabel,
                          const std::string& ylabel) {
  const double W = 760, H = 440, L = 70, R = 20, T = 40, B = 55;  // canvas and margins
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (const Series& s : series)
    for (size_t i = 0; i < s.x.size(); ++i)
      if (std::isfinite(s.y[i])) {
        x0 = std::min(x0, s.x[i]);
        x1 = std::max(x1, s.x[i]);
        y0 = std::min(y0, s.y[i]);
        y1 = std::max(y1, s.y[i]);
      }
  if (!std::isfinite(x0)) throw std::invalid_argument("nothing to plot: no finite values");
  if (x1 == x0) x1 = x0 + 1;
  if (y1 == y0) {
    y0 -= 0.5;
    y1 += 0.5;
  }
  const double pad = 0.04 * (y1 - y0);
  y0 -= pad;
  y1 += pad;
  auto px = [&](double x) { return L + (x - x0) / (x1 - x0) * (W - L - R); };
  auto py = [&](double y) { return H - B - (y - y0) / (y1 - y0) * (H - T - B); };
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
    << kPlotMark << "\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o << "<text x=\"" << W / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">" << escape(title) << "</text>\n";
  for (double t : ticks(y0, y1, 6))
    o << "<line x1=\"" << L << "\" x2=\"" << W - R << "\" y1=\"" << py(t) << "\" y2=\"" << py(t)
      << "\" stroke=\"#e5e5e5\"/><text x=\"" << L - 6 << "\" y=\"" << py(t) + 4 << "\" text-anchor=\"end\">" << num(t)
      << "</text>\n";
  for (double t : ticks(x0, x1, 8))
    o << "<line x1=\"" << px(t) << "\" x2=\"" << px(t) << "\" y1=\"" << T << "\" y2=\"" << H - B
      << "\" stroke=\"#f0f0f0\"/><text x=\"" << px(t) << "\" y=\"" << H - B + 18 << "\" text-anchor=\"middle\">"
      << num(t) << "</text>\n";
  o << "<rect x=\"" << L << "\" y=\"" << T << "\" width=\"" << W - L - R << "\" height=\"" << H - T - B
    << "\" fill=\"none\" stroke=\"#444\"/>\n";
  o << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 12 << "\" text-anchor=\"middle\">" << escape(xlabel)
    << "</text>\n";
  o << "<text transform=\"translate(18," << (T + H - B) / 2 << ") rotate(-90)\" text-anchor=\"middle\">"
    << escape(ylabel) << "</text>\n";
  int row = 0;
  for (const Series& s : series) {
    const char* color = kPalette[s.color % 8];
    o << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"1.6\""
      << (s.dashed ? " stroke-dasharray=\"6 4\"" : "") << " points=\"";
    for (size_t i = 0; i < s.x.size(); ++i)
      if (std::isfinite(s.y[i])) o << px(s.x[i]) << "," << py(s.y[i]) << " ";
    o << "\"/>\n";
    const double ly = T + 16 + 16 * row++;  // legend, top right
    o << "<line x1=\"" << W - R - 190 << "\" x2=\"" << W - R - 165 << "\" y1=\"" << ly - 4 << "\" y2=\"" << ly - 4
      << "\" stroke=\"" << color << "\" stroke-width=\"2\"" << (s.dashed ? " stroke-dasharray=\"6 4\"" : "")
      << "/><text x=\"" << W - R - 160 << "\" y=\"" << ly << "\">" << escape(s.label) << "</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

std::string plot_runs(const std::vector<std::string>& run_dirs, const std::string& metric) {
  std::vector<Series> series;
  int color = 0;
  for (const std::string& dir : run_dirs) {
    LossTable t = read_loss_csv(dir + "/loss.csv");
    const int c = t.column(metric);
    if (c < 0) throw std::invalid_argument(dir + "/loss.csv has no column '" + metric + "'");
    const std::string name = run_dirs.size() > 1 ? dir.substr(dir.find_last_of('/') + 1) + " " : "";
    Series train{name + metric, {}, {}, false, color}, val{name + "val_loss", {}, {}, true, color};
    const int vc = metric == "loss" ? t.column("val_loss") : -1;
    for (const auto& row : t.rows) {
      train.x.push_back(row[0]);
      train.y.push_back(row[c]);
      if (vc >= 0 && std::isfinite(row[vc])) {
        val.x.push_back(row[0]);
        val.y.push_back(row[vc]);
      }
    }
    series.push_back(train);
    if (!val.x.empty()) series.push_back(val);
    ++color;
  }
  return svg_line_plot(series, metric == "loss" ? "loss (nats per token)" : metric, "step", metric);
}

}  // namespace shardlab
