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

// Train curves: one hue per run. A run's validation loss: its own colour — the contrasting orange when the
// picture holds one run, else the run's hue darkened — dashed, with a marker at every evaluation.
const char* kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"};
constexpr const char* kValidationAlone = "#ff7f0e";

std::string darker(const std::string& hex) {  // "#rrggbb" at 55% brightness
  char b[8];
  const unsigned v = std::stoul(hex.substr(1), nullptr, 16);
  std::snprintf(b, sizeof b, "#%02x%02x%02x", ((v >> 16) & 255) * 55 / 100, ((v >> 8) & 255) * 55 / 100,
                (v & 255) * 55 / 100);
  return b;
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

// UTF-8 code points of s, each as its bytes.
std::vector<std::string> code_points(const std::string& s) {
  std::vector<std::string> out;
  for (char c : s)
    if ((static_cast<unsigned char>(c) & 0xC0) == 0x80 && !out.empty())
      out.back() += c;
    else
      out.emplace_back(1, c);
  return out;
}

}  // namespace

std::vector<double> round_ticks(double lo, double hi, int n) {
  const double raw = (hi - lo) / n, mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double step = raw / mag < 1.5 ? mag : raw / mag < 3.5 ? 2 * mag : raw / mag < 7.5 ? 5 * mag : 10 * mag;
  std::vector<double> t;
  for (double v = std::ceil(lo / step) * step; v <= hi + 1e-9 * step; v += step)
    t.push_back(std::fabs(v) < 1e-12 * step ? 0 : v);
  return t;
}

std::string shorten_label(const std::string& label, size_t max_chars) {
  const std::vector<std::string> cp = code_points(label);
  if (cp.size() <= max_chars || max_chars < 3) return label;
  const size_t tail = (max_chars - 1) / 2, head = max_chars - 1 - tail;
  std::string o;
  for (size_t i = 0; i < head; ++i) o += cp[i];
  o += "\u2026";
  for (size_t i = cp.size() - tail; i < cp.size(); ++i) o += cp[i];
  return o;
}

double label_width(const std::string& label, double font_px) {
  return 0.62 * font_px * static_cast<double>(code_points(label).size());
}

std::string plot_output_problem(const std::string& path, const std::vector<std::string>& inputs,
                                const std::string& flag) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (std::string why = output_file_problem(path, flag, "", inputs); !why.empty()) return why;
  if (fs::exists(path, ec) && read_file(path, size_t(64) << 20).substr(0, 512).find(kPlotMark) == std::string::npos)
    return "'" + path + "' is a file of shardlab's but not a picture it drew; give another " + flag;
  return "";
}

std::string svg_line_plot(const std::vector<Series>& series, const std::string& title, const std::string& xlabel,
                          const std::string& ylabel) {
  const double W = 760, L = 70, R = 20, T = 40, B = 55;  // width, margins around the plot area
  const double plot_bottom = 440 - B;                    // the x axis; its ticks and label below it
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
  auto py = [&](double y) { return plot_bottom - (y - y0) / (y1 - y0) * (plot_bottom - T); };

  // The legend: a band below the x axis's label, in columns as wide as the widest entry — a swatch (the
  // series' line, with its marker) and the label, shortened to fit the picture's width — filled row by row;
  // an even number of columns keeps a run's training and validation entries side by side.
  const double font = 12, swatch = 30, gap = 18, row_h = 18, avail = W - L - R;
  const size_t max_chars = static_cast<size_t>((avail - swatch - 6) / label_width("x", font));
  std::vector<std::string> labels;
  double entry = 0;
  for (const Series& s : series) {
    labels.push_back(shorten_label(s.label, max_chars));
    entry = std::max(entry, swatch + 6 + label_width(labels.back(), font));
  }
  int cols = std::max(1, static_cast<int>((avail + gap) / (entry + gap)));
  if (cols > 2) cols -= cols % 2;
  const double legend_top = plot_bottom + 62;
  const int rows = (static_cast<int>(series.size()) + cols - 1) / cols;
  const auto entry_x = [&](size_t k) { return L + static_cast<double>(k % cols) * (entry + gap); };
  const auto entry_y = [&](size_t k) { return legend_top + static_cast<double>(k / cols) * row_h; };
  const double H = legend_top + (rows - 1) * row_h + 14;

  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" font-family=\"sans-serif\" font-size=\"" << font << "\">\n"
    << kPlotMark << "\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  o << "<text x=\"" << W / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">" << escape(title) << "</text>\n";
  for (double t : round_ticks(y0, y1, 6))
    o << "<line x1=\"" << L << "\" x2=\"" << W - R << "\" y1=\"" << py(t) << "\" y2=\"" << py(t)
      << "\" stroke=\"#e5e5e5\"/><text x=\"" << L - 6 << "\" y=\"" << py(t) + 4 << "\" text-anchor=\"end\">" << num(t)
      << "</text>\n";
  for (double t : round_ticks(x0, x1, 8))
    o << "<line x1=\"" << px(t) << "\" x2=\"" << px(t) << "\" y1=\"" << T << "\" y2=\"" << plot_bottom
      << "\" stroke=\"#f0f0f0\"/><text x=\"" << px(t) << "\" y=\"" << plot_bottom + 18 << "\" text-anchor=\"middle\">"
      << num(t) << "</text>\n";
  o << "<rect class=\"plot-area\" x=\"" << L << "\" y=\"" << T << "\" width=\"" << W - L - R << "\" height=\""
    << plot_bottom - T << "\" fill=\"none\" stroke=\"#444\"/>\n";
  o << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << plot_bottom + 40 << "\" text-anchor=\"middle\">"
    << escape(xlabel) << "</text>\n";
  o << "<text transform=\"translate(18," << (T + plot_bottom) / 2 << ") rotate(-90)\" text-anchor=\"middle\">"
    << escape(ylabel) << "</text>\n";
  const auto style = [](const Series& s, double width) {
    return "stroke=\"" + s.color + "\" stroke-width=\"" + num(width) + "\"" +
           (s.dashed ? " stroke-dasharray=\"6 4\"" : "");
  };
  const auto marker = [](const Series& s, double x, double y) {
    return "<circle cx=\"" + num(x) + "\" cy=\"" + num(y) + "\" r=\"3\" fill=\"white\" stroke=\"" + s.color +
           "\" stroke-width=\"1.5\"/>";
  };
  for (const Series& s : series) {
    o << "<polyline fill=\"none\" " << style(s, 1.6) << " points=\"";
    for (size_t i = 0; i < s.x.size(); ++i)
      if (std::isfinite(s.y[i])) o << px(s.x[i]) << "," << py(s.y[i]) << " ";
    o << "\"/>\n";
    if (s.markers)
      for (size_t i = 0; i < s.x.size(); ++i)
        if (std::isfinite(s.y[i])) o << marker(s, px(s.x[i]), py(s.y[i]));
    if (s.markers) o << "\n";
  }
  o << "<g class=\"legend\">\n";
  for (size_t k = 0; k < series.size(); ++k) {
    const Series& s = series[k];
    const double x = entry_x(k), y = entry_y(k);
    o << "<line x1=\"" << x << "\" x2=\"" << x + swatch << "\" y1=\"" << y - 4 << "\" y2=\"" << y - 4 << "\" "
      << style(s, 2) << "/>" << (s.markers ? marker(s, x + swatch / 2, y - 4) : "") << "<text x=\"" << x + swatch + 6
      << "\" y=\"" << y << "\">" << escape(labels[k]) << "</text>\n";
  }
  o << "</g>\n</svg>\n";
  return o.str();
}

std::string plot_runs(const std::vector<std::string>& run_dirs, const std::string& metric) {
  // A run's name: its directory's last component, or the whole path when two runs share that.
  std::vector<std::string> names;
  for (std::string dir : run_dirs) {
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    names.push_back(dir.substr(dir.find_last_of('/') + 1));
  }
  for (size_t i = 0; i < names.size(); ++i)
    if (std::count(names.begin(), names.end(), names[i]) > 1) names[i] = run_dirs[i];
  std::vector<Series> series;
  const bool one = run_dirs.size() == 1;
  for (size_t r = 0; r < run_dirs.size(); ++r) {
    LossTable t = read_loss_csv(run_dirs[r] + "/loss.csv");
    if (!t.torn.empty()) std::fprintf(stderr, "shardlab: warning: %s\n", t.torn.c_str());
    const int c = t.column(metric);
    if (c < 0) throw std::invalid_argument(run_dirs[r] + "/loss.csv has no column '" + metric + "'");
    const std::string name = one ? "" : shorten_label(names[r], 40) + " ", hue = kPalette[r % 8];
    const bool is_loss = metric == "loss";
    Series train{name + (is_loss ? "training loss" : metric), {}, {}, hue};
    Series val{name + "validation loss", {}, {}, one ? kValidationAlone : darker(hue), true, true};
    const int vc = is_loss ? t.column("val_loss") : -1;
    for (const auto& row : t.rows) {
      train.x.push_back(row[0]);
      train.y.push_back(row[c]);
      if (vc >= 0 && std::isfinite(row[vc])) {
        val.x.push_back(row[0]);
        val.y.push_back(row[vc]);
      }
    }
    val.markers = val.x.size() <= 100;  // more would merge into a thick line: the dashes alone then
    if (one && !val.x.empty())
      val.label += val.x.size() == 1 ? " (1 evaluation)" : " (" + std::to_string(val.x.size()) + " evaluations)";
    series.push_back(train);
    if (!val.x.empty()) series.push_back(val);
  }
  return svg_line_plot(series, metric == "loss" ? "loss (nats per token)" : metric, "step", metric);
}

}  // namespace shardlab
