// `shardlab plot RUN_DIR… [--out FILE.svg] [--metric loss|grad_norm|lr]`: runs' curves in one SVG
// picture (report/plot.h).
#include <cstdio>
#include <stdexcept>

#include "cli/command.h"
#include "io/owned_files.h"
#include "report/plot.h"

namespace shardlab {

int plot_command(const CommandArgs& args, const Runtime& rt) {
  std::vector<std::string> dirs;
  std::string out = "plot.svg", metric = "loss";
  Flags flags("shardlab plot", "Draw runs' curves (their loss.csv) into one SVG picture.");
  flags.positional("runs", dirs, "RUN_DIR…: directories written with --out", 1, 1000);
  flags.add("--out", out, "the SVG file to write");
  flags.choice("--metric", metric, {"loss", "grad_norm", "lr"}, "the loss.csv column to draw");
  if (int rc = parse_command(flags, args, rt, "shardlab plot"); rc >= 0) return rc;
  if (!rt.is_root()) return 0;
  if (out.empty()) throw std::invalid_argument("--out needs a file name");
  std::vector<std::string> inputs;
  for (const std::string& d : dirs) inputs.push_back(d + "/loss.csv");
  if (std::string why = plot_output_problem(out, inputs); !why.empty()) throw std::invalid_argument(why);
  write_owned_file(out, plot_runs(dirs, metric));
  std::printf("wrote %s (%zu run%s, %s)\n", out.c_str(), dirs.size(), dirs.size() > 1 ? "s" : "", metric.c_str());
  return 0;
}

}  // namespace shardlab
