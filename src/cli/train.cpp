// `shardlab train`: flags (train/train_config.h), --resume resolution, validation before any rank
// talks to another, the data file, then the training loop (train/trainer.h).
#include <cstdio>
#include <memory>

#include "cli/command.h"
#include "io/data.h"
#include "train/resume.h"
#include "train/trainer.h"

namespace shardlab {

int train_command(const CommandArgs& args, const Runtime& rt) {
  TrainConfig cfg;
  Flags flags("shardlab train",
              "Train the GPT on the data file, on one process or under mpirun on several ranks (layout flags).");
  add_train_flags(flags, cfg);
  if (int rc = parse_command(flags, args, rt, "shardlab train"); rc >= 0) return rc;
  std::string err;
  int64_t resume_step = 0;
  if (!cfg.resume.empty()) {
    try {
      err = resolve_resume(args, cfg, resume_step);  // reads and verifies the checkpoint on every rank alike
    } catch (const std::exception& e) {
      err = e.what();
    }
  }
  if (err.empty()) err = validate_train_config(cfg);
  if (err.empty()) err = validate_world(cfg, rt.size());
  if (!err.empty()) {
    if (rt.is_root()) std::fprintf(stderr, "shardlab train: error: %s\n", err.c_str());
    return 2;
  }
  if (rt.is_root() && (cfg.zero > 0 || cfg.fsdp != "none") && (cfg.dp ? cfg.dp : rt.size()) == 1)
    std::fprintf(stderr, "shardlab train: warning: --zero/--fsdp with one data-parallel rank shards nothing\n");
  // Every rank reads the data; a bad file is the same error everywhere, reported once.
  std::unique_ptr<TextData> data;
  try {
    data = std::make_unique<TextData>(cfg.data, cfg.model.seq, cfg.model.vocab);
  } catch (const std::exception& e) {
    if (rt.is_root()) std::fprintf(stderr, "shardlab train: error: %s\n", e.what());
    return 1;
  }
  return train(cfg, resume_step, *data);
}

}  // namespace shardlab
