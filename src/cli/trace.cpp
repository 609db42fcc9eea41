// `shardlab trace RUN_DIR`: per rank, how much communication a traced run (--trace on) hid behind
// compute (report/trace_summary.h).
#include "cli/command.h"
#include "report/trace_summary.h"

namespace shardlab {

int trace_command(const CommandArgs& args, const Runtime& rt) {
  std::vector<std::string> dirs;
  Flags flags("shardlab trace", "Per rank: communication hidden behind compute vs exposed, from DIR/trace.json.");
  flags.positional("run", dirs, "RUN_DIR: a run written with --trace on --out RUN_DIR", 1, 1);
  if (int rc = parse_command(flags, args, rt, "shardlab trace"); rc >= 0) return rc;
  return rt.is_root() ? print_trace_summary(dirs[0]) : 0;
}

}  // namespace shardlab
