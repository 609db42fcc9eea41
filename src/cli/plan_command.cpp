// `shardlab plan`'s entry: `--calibrate` runs on every rank of its 2-rank job (cli/plan_calibrate.cpp); every other
// mode (the formulas, --ledger, --search, --predict: cli/plan.cpp's plan_run) on rank 0 alone.
#include <algorithm>
#include <iostream>

#include "cli/command.h"

namespace shardlab {

int plan_command(const CommandArgs& args, const Runtime& rt) {
  if (std::find(args.begin(), args.end(), "--calibrate") != args.end()) return plan_calibrate_command(args, rt);
  return rt.is_root() ? plan::plan_run(args, std::cout, std::cerr) : 0;
}

}  // namespace shardlab
