// Pipeline schedules drawn as SVG (see schedule_svg.h).
#include "report/schedule_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "report/plot.h"

namespace shardlab {

namespace {
const char* kForward[] = {"#4e79a7", "#7fa6cf", "#a9c5e3", "#cfe0f1"};
const char* kBackward[] = {"#59a14f", "#86c27c", "#b0dba7", "#d5eed0"};
const char* kInk[] = {"white", "white", "#1a1a1a", "#1a1a1a"};  // legible on each shade

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

// A cell's label and its font size in a cell `w` wide: the micro-batch's number with the chunk's letter
// ("12b") at 11 px or smaller down to 8, else the number alone (the shade still tells the chunk), else
// nothing (size 0) — a label never runs past its cell.
std::pair<std::string, double> cell_label(const Slot& slot, int v, double w) {
  const std::string number = std::to_string(slot.micro_batch);
  for (const std::string& label : {v > 1 ? number + char('a' + slot.chunk) : number, number})
    for (double font : {11.0, 10.0, 9.0, 8.0})
      if (label_width(label, font) + 2 <= w) return {label, font};
  return {"", 0};
}
}  // namespace

std::string schedule_svg(const std::vector<SchedulePanel>& panels, int v) {
  const double W = 900, L = 70, R = 20, row = 26, gap = 6, head = 34, axis = 18, line = 16, after = 12;
  double H = 10;
  for (const SchedulePanel& p : panels)
    H += head + p.stages.size() * (row + gap) + axis + line + (p.note.empty() ? 0 : line) + after;
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" font-family=\"sans-serif\" font-size=\"11\">\n"
    << kPlotMark << "\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  double y = 10;
  for (const SchedulePanel& p : panels) {
    o << "<text x=\"" << L << "\" y=\"" << y + 18 << "\" font-size=\"13\">" << p.title << "</text>\n";
    y += head;
    const double span = p.makespan > 0 ? p.makespan : 1, scale = (W - L - R) / span;
    const double rows_h = p.stages.size() * (row + gap) - gap;
    const std::vector<double> ticks = round_ticks(0, span, 10);
    for (size_t s = 0; s < p.stages.size(); ++s) {
      const double top = y + s * (row + gap);
      o << "<text x=\"" << L - 8 << "\" y=\"" << top + row / 2 + 4 << "\" text-anchor=\"end\">stage " << s
        << "</text>\n<rect x=\"" << L << "\" y=\"" << top << "\" width=\"" << W - L - R << "\" height=\"" << row
        << "\" fill=\"#e8e8e8\"/>\n";  // idle
    }
    for (double t : ticks)  // the time grid, seen through the idle gaps (the slots are drawn over it)
      o << "<line x1=\"" << L + t * scale << "\" x2=\"" << L + t * scale << "\" y1=\"" << y << "\" y2=\""
        << y + rows_h + 4 << "\" stroke=\"#bbb\" stroke-width=\"0.6\"/>";
    o << "\n";
    for (size_t s = 0; s < p.stages.size(); ++s) {
      const double top = y + s * (row + gap);
      for (const Slot& slot : p.stages[s]) {
        const bool fwd = slot.act == Act::forward;
        const int shade = std::min(slot.chunk, 3);
        const double x = L + slot.start * scale, w = std::max(0.5, (slot.end - slot.start) * scale);
        o << "<rect x=\"" << x << "\" y=\"" << top << "\" width=\"" << w << "\" height=\"" << row << "\" fill=\""
          << (fwd ? kForward : kBackward)[shade] << "\" stroke=\"white\" stroke-width=\"0.5\"/>\n";
        const auto [label, font] = cell_label(slot, v, w);
        if (font > 0)
          o << "<text x=\"" << x + w / 2 << "\" y=\"" << top + row / 2 + font / 3 << "\" font-size=\"" << font
            << "\" text-anchor=\"middle\" fill=\"" << kInk[shade] << "\">" << label << "</text>\n";
      }
    }
    y += rows_h + gap;
    // The time axis: round ticks from 0 (the unit is in the caption under it); under it what the colours mean.
    for (double t : ticks)
      o << "<text x=\"" << L + t * scale << "\" y=\"" << y + 12
        << "\" font-size=\"10\" fill=\"#444\" text-anchor=\"middle\">" << num(t) << "</text>";
    o << "\n";
    y += axis;
    o << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << y + 11 << "\" text-anchor=\"middle\" fill=\"#555\">time in "
      << p.unit << ", the whole " << num(std::round(span * 100) / 100)
      << (v > 1 ? "; blue: forward, green: backward (lighter: later chunks a, b, …)"
                : "; blue: forward, green: backward")
      << ", grey: idle (the bubble)</text>\n";
    y += line;
    if (!p.note.empty()) {
      o << "<text class=\"note\" x=\"" << (L + W - R) / 2 << "\" y=\"" << y + 11
        << "\" text-anchor=\"middle\" font-weight=\"bold\" fill=\"#b35900\">" << p.note << "</text>\n";
      y += line;
    }
    y += after;
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace shardlab
