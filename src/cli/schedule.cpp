// `shardlab schedule [--pp P --micro-batches M --schedule gpipe|1f1b|interleaved --virtual-stages V
// --backward-cost B --svg FILE]`: a pipeline schedule as the trainer runs it (parallel/schedule.h), played
// out with a forward costing 1 and a backward B: the text grid (one row per stage), its bubble beside the
// chapter's formula (also with equal forward and backward costs), the stash per stage and the point-to-point
// messages per boundary; --svg draws the same picture (claims C20–C22).
#include <cstdio>
#include <fstream>
#include <stdexcept>

#include "cli/command.h"
#include "io/owned_files.h"
#include "parallel/schedule.h"
#include "report/plot.h"
#include "report/schedule_svg.h"

namespace shardlab {

int schedule_command(const CommandArgs& args, const Runtime& rt) {
  int p = 4, m = 8, v = 1;
  double backward = 2;
  std::string kind_name = "1f1b", svg;
  Flags flags("shardlab schedule",
              "A pipeline schedule as the trainer runs it: the grid, its bubble beside the formula, the stash.");
  flags.add("--pp", p, "pipeline stages p", 1, 64);
  flags.add("--micro-batches", m, "micro-batches per step m", 1, 1024);
  flags.choice("--schedule", kind_name, {"gpipe", "1f1b", "interleaved"}, "the schedule");
  flags.add("--virtual-stages", v, "model chunks per stage (interleaved)", 1, 8);
  flags.add("--backward-cost", backward, "a backward's time in forwards (the chapter: 2)");
  flags.add("--svg", svg, "also draw it into FILE (never over a file shardlab did not draw)", "FILE");
  if (int rc = parse_command(flags, args, rt, "shardlab schedule"); rc >= 0) return rc;
  ScheduleKind kind = ScheduleKind::one_f_one_b;
  parse_schedule(kind_name, &kind);
  if (!(backward > 0 && backward <= 100)) throw std::invalid_argument("--backward-cost must be in (0, 100]");
  if (std::string why = schedule_shape_problem(kind, p, m, v); !why.empty()) throw std::invalid_argument(why);
  if (!svg.empty())
    if (std::string why = plot_output_problem(svg, {}, "--svg"); !why.empty())
      throw std::invalid_argument("--svg: " + why);
  if (!rt.is_root()) return 0;

  const std::vector<StageActions> s = make_schedule(kind, p, m, v);
  const Timeline t = simulate(s, v, 1.0, backward), equal = simulate(s, v, 1.0, 1.0);
  if (!t.complete) {
    print_line("shardlab schedule", "error", "the schedule is invalid: " + t.problem);
    return 1;
  }
  const std::string chunks = v > 1 ? ", " + std::to_string(v) + " model chunks per stage (a, b, …)" : "";
  std::printf("%s on %d stage%s, %d micro-batch%s%s; a forward of a stage costs 1, a backward %g\n",
              schedule_name(kind), p, p > 1 ? "s" : "", m, m > 1 ? "es" : "", chunks.c_str(), backward);
  std::printf("%s", schedule_grid(t, v, 1.0 / v).c_str());
  const double formula = bubble_formula(kind, p, m, v);
  std::printf(
      "  bubble: %.1f%% of every stage's time idle on average (%.1f%% with equal forward and backward); "
      "the formula: %s = %.1f%%\n",
      100 * t.bubble_fraction(), 100 * equal.bubble_fraction(),
      kind == ScheduleKind::interleaved ? "(p−1)/(v·m + p−1)" : "(p−1)/(m+p−1)", 100 * formula);
  if (kind == ScheduleKind::interleaved)
    std::printf(
        "          (as overhead over the ideal time: (p−1)/(v·m) = %.1f%%, against (p−1)/m = %.1f%% without "
        "interleaving)\n",
        100.0 * (p - 1) / (double(v) * m), 100.0 * (p - 1) / m);
  std::printf("  stash (micro-batch records alive at once%s): stage", v > 1 ? ", one per chunk" : "");
  for (int x : t.stash) std::printf(" %d", x);
  std::printf("%s\n", kind == ScheduleKind::gpipe ? "  — GPipe keeps all m"
                      : kind == ScheduleKind::one_f_one_b
                          ? "  — 1F1B keeps at most p − s"
                          : "  — at most Megatron's warmup + 1 = 2(p − s − 1) + (v − 1)p + 1");
  const std::string borders = p * v == 2 ? "the one border" : "each of the " + std::to_string(p * v - 1) + " borders";
  if (p * v == 1)
    std::printf("  point to point: none (one model chunk, no borders); no collectives\n");
  else
    std::printf(
        "  point to point: %d activation%s forward and %d gradient%s backward across %s between model chunks per "
        "step; no collectives\n",
        m, m > 1 ? "s" : "", m, m > 1 ? "s" : "", borders.c_str());
  if (!svg.empty()) {
    char title[128];
    std::snprintf(title, sizeof title, "%s, ideal: a forward costs 1, a backward %g", schedule_name(kind), backward);
    write_owned_file(svg, schedule_svg({{title, t.stages, t.makespan, "forward units", ""}}, v));
    std::printf("drew %s\n", svg.c_str());
  }
  return 0;
}

}  // namespace shardlab
