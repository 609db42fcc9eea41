// shardlab: a CPU-only reference trainer that makes distributed training visible and checkable.
//   shardlab train    train the GPT (flags: shardlab train --help)
//   shardlab eval     mean loss of a checkpoint over a text file
//   shardlab sample   generate text from a checkpoint
//   shardlab compare  per-step loss comparison of two runs
//   shardlab plan     the chapter's memory formulas, for presets or any dims
//   shardlab plot     loss curves of runs as an SVG picture
//   shardlab trace    how much communication a traced run hid behind compute
//   shardlab ring     the ring all-reduce checked and timed against MPI's (C8)
//   shardlab bench    training throughput against the machine's sgemm
//   shardlab swamping bf16 rounding swallowing small updates (claim C2)
// Every error is one message (from rank 0) and a non-zero exit.
#include <cblas.h>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "comm/runtime.h"
#include "optim/swamping.h"
#include "parallel/ring_check.h"
#include "plan/plan_cli.h"
#include "train/bench.h"
#include "train/compare.h"
#include "train/plot.h"
#include "train/trace_summary.h"
#include "train/trainer.h"

using namespace shardlab;

static const char* kUsage =
    "usage: shardlab <command> [flags]\n"
    "  train     train the GPT (shardlab train --help for every flag)\n"
    "  eval      --load CKPT --data FILE: mean loss over the file's windows\n"
    "  sample    --load CKPT --prompt TEXT [--tokens N --temperature X --seed S]: generate text\n"
    "  compare   REF_DIR RUN_DIR [--rtol X] [--all]: compare two runs' loss curves\n"
    "  plan      [--preset 7b|70b | dims]: the chapter's model-state and activation formulas\n"
    "  plot      RUN_DIR… [--out FILE.svg --metric loss|grad_norm|lr]: loss curves as an SVG picture\n"
    "  trace     RUN_DIR: per rank, communication hidden behind compute vs exposed (a run with --trace on)\n"
    "  ring      [--elements N --dtype f32|f64|bf16 --sizes-mb a,b]: the ring all-reduce vs MPI's (under mpirun)\n"
    "  bench     [model flags] [--steps N]: tokens/s and GFLOP/s against OpenBLAS sgemm\n"
    "  swamping  [--weight W --update U --steps N]: why bf16 weights need an fp32 master (C2)\n";

int main(int argc, char** argv) {
  Runtime rt(argc, argv);
  openblas_set_num_threads(1);  // one BLAS thread per rank: ranks are the parallelism
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    if (rt.is_root()) std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  try {
    if (cmd == "train") return train_main(args, rt);
    if (cmd == "eval") return eval_main(args, rt);
    if (cmd == "sample") return sample_main(args, rt);
    if (cmd == "compare") return rt.is_root() ? compare_main(args) : 0;
    if (cmd == "plot") return rt.is_root() ? plot_main(args) : 0;
    if (cmd == "trace") return rt.is_root() ? trace_main(args) : 0;
    if (cmd == "ring") return ring_main(args, rt);
    if (cmd == "bench") return rt.is_root() ? bench_main(args) : 0;
    if (cmd == "swamping") return rt.is_root() ? swamping_main(args) : 0;
    if (cmd == "plan") return rt.is_root() ? plan::plan_main(argc - 1, argv + 1) : 0;
    if (rt.is_root()) std::fprintf(stderr, "shardlab: error: unknown command '%s' (shardlab --help lists the commands)\n", cmd.c_str());
    return 2;
  } catch (const std::exception& e) {
    // Errors every rank detects alike (flags, files) are reported once, by rank 0, before any rank
    // talks to another. Anything else may strike one rank mid-run while the others wait for it:
    // that rank reports and ends the whole job, so nobody hangs.
    const int code = dynamic_cast<const std::invalid_argument*>(&e) ? 2 : 1;
    if (rt.size() > 1 && cmd == "train") {
      std::fprintf(stderr, "shardlab %s: error (rank %d): %s\n", cmd.c_str(), rt.rank(), e.what());
      rt.abort(code);
    }
    if (rt.is_root()) std::fprintf(stderr, "shardlab %s: error: %s\n", cmd.c_str(), e.what());
    return code;
  }
}
