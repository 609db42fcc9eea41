// `shardlab train`: flags (train/train_config.h), --resume resolution, then every check that can fail
// before the first step — configuration, the world's layout, the data file, memory, the output
// directories — each reported once (rank 0) with exit 2 (1 for files), and only then the training loop
// (train/trainer.h).
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "comm/communicator.h"
#include "io/data.h"
#include "train/memory_check.h"
#include "train/resume.h"
#include "train/run_dirs.h"
#include "train/trainer.h"

namespace shardlab {

namespace {
int refuse(const Runtime& rt, const std::string& why, int code) {
  if (rt.is_root()) print_line("shardlab train", "error", why);
  return code;
}
}  // namespace

int train_command(const CommandArgs& args, const Runtime& rt) {
  TrainConfig cfg;
  Flags flags("shardlab train",
              "Train the GPT on the data file, on one process or under mpirun on several ranks (layout flags).");
  add_train_flags(flags, cfg);
  if (int rc = parse_command(flags, args, rt, "shardlab train"); rc >= 0) return rc;
  std::string err;
  int64_t resume_step = 0;
  cfg.run_id = rt.agree(rt.is_root() ? new_run_id() : "");
  CheckpointHold resume_hold;  // the step resumed from, kept from pruning until the trainer has loaded it
  if (!cfg.outputs.resume.empty()) {
    std::string warning;
    try {
      // Reads and verifies the checkpoint on every rank alike.
      err = resolve_resume(args, cfg, resume_step, warning, resume_hold);
    } catch (const std::exception& e) {
      return refuse(rt, e.what(), 1);  // a bad file, like eval's and sample's
    }
    if (err.empty() && !warning.empty() && rt.is_root()) print_line("shardlab train", "warning", warning);
  }
  if (err.empty()) err = validate_train_config(cfg);
  if (err.empty()) err = validate_world(cfg, rt.size());
  if (!err.empty()) return refuse(rt, err, 2);
  if (rt.is_root() && (cfg.layout.zero > 0 || cfg.layout.fsdp) && cfg.layout.dp_size(rt.size()) == 1)
    std::fprintf(stderr, "shardlab train: warning: --zero/--fsdp with one data-parallel rank shards nothing\n");
  if (const std::string bubble = pipeline_bubble_warning(cfg, rt.size()); rt.is_root() && !bubble.empty())
    print_line("shardlab train", "warning", bubble);
  // Every rank reads the data; a bad file is the same error everywhere, reported once.
  std::unique_ptr<TextData> data;
  try {
    data = std::make_unique<TextData>(cfg.run.data, cfg.model.seq, cfg.model.vocab);
  } catch (const std::exception& e) {
    return refuse(rt, e.what(), 1);
  }
  if (err = check_memory(cfg, rt.size(), double(data->train_bytes() + data->val_bytes())); !err.empty())
    return refuse(rt, err, 2);
  // Rank 0 writes every file, so it claims the directories (and holds their locks until the run ends).
  RunDirs dirs;
  err = rt.agree(rt.is_root() ? dirs.claim(cfg, resume_step, {cfg.run.data, flags.config_path()}) : "");
  if (!err.empty()) return refuse(rt, err, 2);
  if (flags.given("--comm-timeout")) set_comm_timeout(cfg.run.comm_timeout);  // else $SHARDLAB_COMM_TIMEOUT or 120 s
  return train(cfg, resume_step, *data, resume_hold);
}

}  // namespace shardlab
