// What every command of the shardlab program shares: its entry point's shape, parse_command,
// which turns --help and bad flags into the same behaviour everywhere (help or one error line, from
// one rank only; exit 0 for help, 2 for an error), refuse_together, and the form of every error and warning line
// (core/error_line.h: long values shortened). One file per command: cli/<command>.cpp.
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "comm/runtime.h"
#include "core/error_line.h"
#include "core/flags.h"

namespace shardlab {

// -1: the flags are good, run the command. Otherwise the exit code (help printed, or the error: refuse_together).
int parse_command(Flags& flags, const std::vector<std::string>& args, const Runtime& rt, const std::string& command);

// One rank's verdict on its input (its flags, its data file, its settings), settled by every rank together
// (collective over the world): -1 when no rank refused, else the lowest refusing rank prints why (naming itself
// when it is not rank 0) and every rank returns that rank's code, so that the job ends with exactly one line
// whichever rank refused, never waiting for a rank that has gone. why: "" when this rank accepts.
int refuse_together(const Runtime& rt, const std::string& command, const std::string& why, int code);

// Where this rank's arguments differ from rank 0's — "its command line differs from rank 0's at argument 3: '--steps 7'
// (rank 0: '--steps 6'); …" — or "" (collective over the world; "" at once on one process). Under mpirun every rank
// must run the same command line: main settles the command, parse_command its flags.
std::string command_line_differs(const std::vector<std::string>& args, const Runtime& rt);

// For commands that print to streams (plan and its modes): parses args onto flags; --help prints the help to out and
// returns true (exit 0); a bad flag throws Fail{message}, for the command's own one-line error and exit 2.
template <class Fail>
bool printed_help(Flags& flags, const std::vector<std::string>& args, std::ostream& out) {
  const ParseResult r = flags.parse(args);
  if (r.kind == ParseResult::error) throw Fail{r.message};
  if (r.kind == ParseResult::help) out << flags.help();
  return r.kind == ParseResult::help;
}

using CommandArgs = std::vector<std::string>;  // the arguments after the command's name
int train_command(const CommandArgs& args, const Runtime& rt);
int eval_command(const CommandArgs& args, const Runtime& rt);
int sample_command(const CommandArgs& args, const Runtime& rt);
int compare_command(const CommandArgs& args, const Runtime& rt);
int plan_command(const CommandArgs& args, const Runtime& rt);
int plot_command(const CommandArgs& args, const Runtime& rt);
int trace_command(const CommandArgs& args, const Runtime& rt);
int ring_command(const CommandArgs& args, const Runtime& rt);
int mlp_split_command(const CommandArgs& args, const Runtime& rt);
int ring_attention_command(const CommandArgs& args, const Runtime& rt);
int moe_layer_command(const CommandArgs& args, const Runtime& rt);
int schedule_command(const CommandArgs& args, const Runtime& rt);
int bench_command(const CommandArgs& args, const Runtime& rt);
int swamping_command(const CommandArgs& args, const Runtime& rt);
// `shardlab plan --calibrate` (cli/plan_calibrate.cpp): every rank of a 2-rank job; 0, or 2 on bad input.
int plan_calibrate_command(const CommandArgs& args, const Runtime& rt);

namespace plan {
// `shardlab plan` with its arguments, writing to out/err: 0 on success (ledger mode: everything matches),
// 1 on a ledger mismatch, 2 on bad input.
int plan_run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
// `shardlab plan --search` (cli/plan_search.cpp): 0 with a ranking, 1 when no layout fits the memory, 2 on bad input.
int plan_search_run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
// `shardlab plan --predict` (cli/plan_predict.cpp): 0 with a prediction, 2 on bad input.
int plan_predict_run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
}  // namespace plan

}  // namespace shardlab
