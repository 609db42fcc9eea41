// A step's expert load, summed over the grid, and its files (see moe_load.h).
#include "train/moe_load.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>

#include "core/paths.h"
#include "report/plot.h"

namespace shardlab {

const std::vector<std::string> kMoeLossColumns = {"aux_loss", "z_loss", "imbalance", "dropped"};

double load_imbalance(const std::vector<double>& slots) {
  double sum = 0, most = 0;
  for (double s : slots) sum += s, most = std::max(most, s);
  return sum > 0 ? most / (sum / double(slots.size())) : 0.0;
}

MoeStepLoad step_moe_load(const GPTConfig& model, const MoeStats& mine, const GridSums& sums, int samples, bool exact) {
  const MoeConfig& m = model.moe;
  MoeStepLoad s;
  for (int l = 0; l < model.layers; ++l)
    if (m.in_block(l)) s.layers.push_back(l);
  // One vector: aux, z, dropped, then every MoE block's slots per expert (zeros where another rank holds it).
  std::vector<double> v = {mine.aux, mine.z, mine.dropped};
  for (int l : s.layers)
    for (int e = 0; e < m.experts; ++e)
      v.push_back(size_t(l) < mine.load.size() && !mine.load[l].empty() ? mine.load[l][e] : 0.0);
  v = sums.over_ranks(v);  // the slots are counts: exact in any order
  if (exact) v[0] = sums.exact_over_ranks(mine.aux_terms), v[1] = sums.exact_over_ranks(mine.z_terms);
  const double blocks = double(s.layers.size());
  s.aux_loss = v[0] / (double(samples) * blocks);
  s.z_loss = v[1] / (double(samples) * model.seq * blocks);
  s.dropped = v[2];
  size_t at = 3;
  for (size_t b = 0; b < s.layers.size(); ++b) {
    s.load.emplace_back(v.begin() + at, v.begin() + at + m.experts);
    at += m.experts;
    s.imbalance += load_imbalance(s.load.back()) / blocks;
  }
  return s;
}

void add_step_load(MoeStepLoad& run, const MoeStepLoad& step) {
  run.aux_loss += step.aux_loss, run.z_loss += step.z_loss, run.imbalance += step.imbalance;
  run.dropped += step.dropped;
  run.layers = step.layers;
  run.load.resize(step.load.size());
  for (size_t b = 0; b < step.load.size(); ++b) {
    run.load[b].resize(step.load[b].size(), 0.0);
    for (size_t e = 0; e < step.load[b].size(); ++e) run.load[b][e] += step.load[b][e];
  }
}

nlohmann::json moe_run_json(const GPTConfig& model, int ep, const MoeStepLoad& run, int steps) {
  const MoeConfig& m = model.moe;
  const double n = std::max(1, steps);
  return {{"experts", m.experts},
          {"top_k", m.top_k},
          {"every", m.every},
          {"ffn", m.width(model.hidden)},
          {"capacity", m.capacity},
          {"capacity_slots_per_sample", m.slots_per_sample(model.seq)},
          {"aux_loss", m.aux_loss},
          {"z_loss", m.z_loss},
          {"ep", ep},
          {"steps", steps},
          {"blocks", run.layers},
          {"load", run.load},
          {"dropped", run.dropped},
          {"mean_aux_loss", run.aux_loss / n},
          {"mean_z_loss", run.z_loss / n},
          {"mean_imbalance", run.imbalance / n}};
}

nlohmann::json moe_rows_json(const GPTConfig& model, const ChunkSpec& spec, const std::vector<MoeForwardRows>& rows) {
  std::vector<int> layers;
  for (int l = spec.first_block; l < spec.end_block; ++l)
    if (model.moe.in_block(l)) layers.push_back(l);
  nlohmann::json train = nlohmann::json::array(), eval = nlohmann::json::array();
  for (const MoeForwardRows& f : rows) {
    std::vector<int> v;
    if (!f.train) v.push_back(f.samples);
    for (const auto& b : f.blocks) v.insert(v.end(), b.begin(), b.end());
    (f.train ? train : eval).push_back(v);
  }
  return {{"layers", layers}, {"train", train}, {"eval", eval}};
}

size_t expert_params(const ParamLayout& layout) {
  size_t n = 0;
  for (const TensorSpec& t : layout.tensors())
    if (t.expert) n += t.numel;
  return n;
}

std::string moe_load_header(int experts) {
  std::string h = "step,layer,imbalance";
  for (int e = 0; e < experts; ++e) h += ",expert" + std::to_string(e);
  return h;
}

std::string moe_load_rows(int step, const MoeStepLoad& s) {
  std::string text;
  char num[40];
  for (size_t b = 0; b < s.layers.size(); ++b) {
    std::snprintf(num, sizeof num, "%.6f", load_imbalance(s.load[b]));
    text += (b ? "\n" : "") + std::to_string(step) + "," + std::to_string(s.layers[b]) + "," + num;
    for (double slots : s.load[b]) text += "," + std::to_string(static_cast<long long>(std::llround(slots)));
  }
  return text;
}

std::string moe_load_svg(const std::string& csv_path) {
  std::istringstream in(read_file(csv_path));
  std::string line;
  std::getline(in, line);                       // header
  std::map<int, std::vector<double>> per_step;  // step → slots per expert, all MoE blocks together
  while (std::getline(in, line)) {
    std::vector<double> cells;
    std::stringstream row(line);
    std::string cell;
    while (std::getline(row, cell, ',')) cells.push_back(std::strtod(cell.c_str(), nullptr));
    if (cells.size() < 4) continue;
    std::vector<double>& slots = per_step[static_cast<int>(cells[0])];
    slots.resize(cells.size() - 3, 0.0);
    for (size_t e = 0; e + 3 < cells.size(); ++e) slots[e] += cells[e + 3];
  }
  static const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                  "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
  std::vector<Series> series;
  for (const auto& [step, slots] : per_step) {
    double total = 0;
    for (double v : slots) total += v;
    if (series.size() < slots.size()) series.resize(slots.size());
    for (size_t e = 0; e < slots.size(); ++e) {
      series[e].x.push_back(step);
      series[e].y.push_back(total > 0 ? 100.0 * slots[e] / total : 0.0);
    }
  }
  for (size_t e = 0; e < series.size(); ++e) {
    series[e].label = "expert " + std::to_string(e);
    series[e].color = kColors[e % 10];
    series[e].dashed = e >= 10;
  }
  char even[48] = "";
  if (!series.empty()) std::snprintf(even, sizeof even, " (even: %.1f%%)", 100.0 / double(series.size()));
  return svg_line_plot(series, "each expert's share of the step's slots, all MoE blocks", "step",
                       std::string("% of slots") + even);
}

}  // namespace shardlab
