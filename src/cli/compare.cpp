// `shardlab compare REF_DIR RUN_DIR [--rtol X] [--all]`: two runs' loss curves side by side
// (report/compare.h); exit 1 past the tolerance.
#include "report/compare.h"
#include "cli/command.h"

#include <stdexcept>

namespace shardlab {

int compare_command(const CommandArgs& args, const Runtime& rt) {
  std::vector<std::string> dirs;
  std::optional<double> rtol;
  bool all = false;
  Flags flags("shardlab compare", "Compare two runs' loss curves step by step; exit 1 past the tolerance.");
  flags.positional("runs", dirs, "REF_DIR RUN_DIR: two directories written with --out", 2, 2);
  flags.add("--rtol", rtol,
            "relative tolerance per step (default: 1e-12 if both runs are f64, else 1e-5; 0: bit-identical)");
  flags.flag("--all", all, "print every step, not 25 of them");
  if (int rc = parse_command(flags, args, rt, "shardlab compare"); rc >= 0) return rc;
  if (!rt.is_root()) return 0;
  if (rtol && *rtol < 0) throw std::invalid_argument("--rtol expects a number ≥ 0");
  return compare_runs(dirs[0], dirs[1], rtol ? *rtol : -1, all);
}

}  // namespace shardlab
