// shardlab: a CPU-only reference trainer that makes distributed training visible and checkable.
// The first word names the command (cli/<command>.cpp); `shardlab --help` lists them and
// `shardlab <command> --help` lists a command's flags. Every error is one message (from the rank at fault, rank 0
// when all are) and a non-zero exit: 2 for bad flags or configuration, 1 for anything that goes wrong while running.
#include <cblas.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cli/command.h"
#include "comm/runtime.h"
#include "core/blas_kernel.h"

using namespace shardlab;

namespace {

struct Command {
  const char* name;
  int (*run)(const CommandArgs&, const Runtime&);
  const char* summary;
};

const Command kCommands[] = {
    {"train", train_command, "train the GPT on one process or on MPI ranks"},
    {"eval", eval_command, "mean loss of a checkpoint over a text file's windows"},
    {"sample", sample_command, "generate text from a checkpoint"},
    {"compare", compare_command, "compare two runs' loss curves step by step"},
    {"plan", plan_command,
     "the chapter's memory and communication formulas; --ledger checks a run; --search ranks layouts; --predict one "
     "layout of the trainer before it runs (--calibrate: this machine's rates)"},
    {"plot", plot_command, "loss curves of runs as an SVG picture"},
    {"trace", trace_command, "per rank: communication hidden behind compute vs exposed (--trace on runs)"},
    {"ring", ring_command, "the hand-written ring all-reduce checked and timed against MPI's (under mpirun)"},
    {"mlp-split", mlp_split_command, "one MLP split over tensor-parallel ranks beside the unsharded one (C17)"},
    {"ring-attention", ring_attention_command,
     "ring attention over the ranks beside one process's: output, log-sum-exp, dQ, dK, dV (C24)"},
    {"moe-layer", moe_layer_command,
     "one MoE layer with its experts over the ranks beside one process's: tokens, bytes, gradients (C25)"},
    {"schedule", schedule_command,
     "a pipeline schedule as a grid, its bubble beside the formula, the stash (C20, C21)"},
    {"bench", bench_command, "training tokens/s and GFLOP/s against OpenBLAS sgemm and the FMA peak"},
    {"swamping", swamping_command, "why bf16 weights need an fp32 master copy (C2)"},
};

void print_usage(std::FILE* to) {
  std::fprintf(to, "usage: shardlab <command> [flags]   (shardlab <command> --help lists its flags)\n\ncommands:\n");
  for (const Command& c : kCommands) std::fprintf(to, "  %-14s %s\n", c.name, c.summary);
}

}  // namespace

int main(int argc, char** argv) {
  use_best_blas_kernel(argv);  // may restart this process with a wider GEMM kernel: before MPI, before any GEMM
  Runtime rt(argc, argv);
  openblas_set_num_threads(1);  // one BLAS thread per rank: ranks are the parallelism
  const std::string cmd = argc > 1 ? argv[1] : "";
  // Before anything a rank might decide alone: every rank was given the same command (its flags: parse_command), or
  // the job ends with one line from the first rank that was not (cli/command.h).
  if (int rc = refuse_together(rt, "shardlab", command_line_differs({cmd}, rt), 2); rc >= 0) return rc;
  if (cmd.empty() || cmd == "--help" || cmd == "-h") {
    if (rt.is_root() && cmd.empty()) std::fprintf(stderr, "shardlab: error: no command given\n");
    if (rt.is_root()) print_usage(cmd.empty() ? stderr : stdout);
    return cmd.empty() ? 2 : 0;
  }
  const Command* command = nullptr;
  for (const Command& c : kCommands)
    if (cmd == c.name) command = &c;
  if (!command) {
    if (rt.is_root())
      print_line("shardlab", "error", "unknown command '" + cmd + "' (shardlab --help lists the commands)");
    return 2;
  }
  try {
    return command->run(CommandArgs(argv + 2, argv + argc), rt);
  } catch (const std::exception& e) {
    // Errors every rank detects alike (invalid_argument, exit 2) are reported once, by rank 0. Anything else may strike
    // one rank mid-run while the others wait for it: that rank reports and ends the whole job, so nobody hangs. Rank 0
    // speaks at once; another rank waits first (Runtime::report_delay_seconds, 5 s) — if rank 0 failed too, its abort
    // has ended the job by then and the error is told once (1 s was measured too short on a loaded 2-core machine: both
    // ranks spoke).
    const int code = dynamic_cast<const std::invalid_argument*>(&e) ? 2 : 1;
    const std::string what = dynamic_cast<const std::bad_alloc*>(&e)
                                 ? "out of memory: the machine did not give this process the memory it asked for"
                                 : e.what();
    if (rt.size() > 1 && (code == 1 || cmd == "train")) {
      if (!rt.is_root()) std::this_thread::sleep_for(std::chrono::duration<double>(rt.report_delay_seconds()));
      print_line("shardlab " + cmd, "error (rank " + std::to_string(rt.rank()) + ")", what);
      rt.abort(code);
    }
    if (rt.is_root()) print_line("shardlab " + cmd, "error", what);
    return code;
  }
}
