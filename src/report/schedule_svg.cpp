// Pipeline schedules drawn as SVG (see schedule_svg.h).
#include "report/schedule_svg.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "report/plot.h"

namespace shardlab {

namespace {
const char* kForward[] = {"#4e79a7", "#7fa6cf", "#a9c5e3", "#cfe0f1"};
const char* kBackward[] = {"#59a14f", "#86c27c", "#b0dba7", "#d5eed0"};
}  // namespace

std::string schedule_svg(const std::vector<SchedulePanel>& panels, int v) {
  const double W = 900, L = 70, R = 20, row = 26, gap = 6, head = 34, foot = 30;
  double H = 10;
  for (const SchedulePanel& p : panels) H += head + p.stages.size() * (row + gap) + foot;
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" font-family=\"sans-serif\" font-size=\"11\">\n"
    << kPlotMark << "\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  double y = 10;
  for (const SchedulePanel& p : panels) {
    o << "<text x=\"" << L << "\" y=\"" << y + 18 << "\" font-size=\"13\">" << p.title << "</text>\n";
    y += head;
    const double span = p.makespan > 0 ? p.makespan : 1, scale = (W - L - R) / span;
    for (size_t s = 0; s < p.stages.size(); ++s) {
      const double top = y + s * (row + gap);
      o << "<text x=\"" << L - 8 << "\" y=\"" << top + row / 2 + 4 << "\" text-anchor=\"end\">stage " << s
        << "</text>\n<rect x=\"" << L << "\" y=\"" << top << "\" width=\"" << W - L - R << "\" height=\"" << row
        << "\" fill=\"#e8e8e8\"/>\n";  // idle
      for (const Slot& slot : p.stages[s]) {
        const bool fwd = slot.act == Act::forward;
        const double x = L + slot.start * scale, w = std::max(0.5, (slot.end - slot.start) * scale);
        const char* fill = (fwd ? kForward : kBackward)[std::min(slot.chunk, 3)];
        o << "<rect x=\"" << x << "\" y=\"" << top << "\" width=\"" << w << "\" height=\"" << row << "\" fill=\""
          << fill << "\" stroke=\"white\" stroke-width=\"0.5\"/>\n";
        if (w >= 14) {
          std::string label = std::to_string(slot.micro_batch);
          if (v > 1) label += char('a' + slot.chunk);
          o << "<text x=\"" << x + w / 2 << "\" y=\"" << top + row / 2 + 4
            << "\" text-anchor=\"middle\" fill=\"white\">" << label << "</text>\n";
        }
      }
    }
    y += p.stages.size() * (row + gap);
    o << "<text x=\"" << L << "\" y=\"" << y + 14 << "\">0</text><text x=\"" << W - R << "\" y=\"" << y + 14
      << "\" text-anchor=\"end\">" << std::round(span * 100) / 100 << " " << p.unit << "</text><text x=\""
      << (L + W - R) / 2 << "\" y=\"" << y + 14
      << "\" text-anchor=\"middle\" fill=\"#555\">blue: forward, green: backward, grey: idle (the bubble)</text>\n";
    y += foot;
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace shardlab
