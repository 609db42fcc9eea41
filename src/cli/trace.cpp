// `shardlab trace RUN_DIR`: per rank, how much communication a traced run (--trace on) hid behind
// compute (report/trace_summary.h); for a pipeline run, first its last step as a text grid per stage above
// the schedule's ideal one (the pipeline section of RUN_DIR/ledger.json, report/pipeline_report.h; a section
// no run could have written is refused, saying what is wrong).
#include <cstdio>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "core/paths.h"
#include "io/json_file.h"
#include "report/pipeline_report.h"
#include "report/trace_summary.h"

namespace shardlab {

int trace_command(const CommandArgs& args, const Runtime& rt) {
  std::vector<std::string> dirs;
  Flags flags("shardlab trace",
              "Per rank: communication hidden behind compute vs exposed, from DIR/trace.json; a pipeline run's "
              "measured step as a grid.");
  flags.positional("run", dirs, "RUN_DIR: a run written with --out RUN_DIR (--trace on for the summary)", 1, 1);
  if (int rc = parse_command(flags, args, rt, "shardlab trace"); rc >= 0) return rc;
  if (!rt.is_root()) return 0;
  const std::string ledger = dirs[0] + "/ledger.json";
  bool pipeline = false;
  if (input_file_problem(ledger).empty()) {
    const nlohmann::json j = read_json_file(ledger);  // a damaged one is refused, not read as "no pipeline"
    if (!j.is_object()) throw std::runtime_error(ledger + " is not a ledger.json shardlab wrote (not an object)");
    if (j.contains("pipeline")) {
      std::string grid;
      try {
        grid = pipeline_text(j["pipeline"]);
      } catch (const std::exception& e) {
        throw std::runtime_error(ledger + " does not hold a pipeline section a run wrote: " + e.what());
      }
      std::printf("%s\n", grid.c_str());
      pipeline = true;
    }
  }
  if (pipeline && !input_file_problem(dirs[0] + "/trace.json").empty()) return 0;  // no trace: the grid is all
  return print_trace_summary(dirs[0]);
}

}  // namespace shardlab
