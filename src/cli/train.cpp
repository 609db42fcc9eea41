// `shardlab train`: flags (train/train_config.h), --resume resolution, then every check that can fail
// before the first step — configuration, the world's layout, the data file, memory, the output
// directories — each reported once (rank 0) with exit 2 (1 for files), and only then the training loop
// (train/trainer.h).
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "comm/communicator.h"
#include "io/data.h"
#include "train/memory_check.h"
#include "train/resume.h"
#include "train/run_dirs.h"
#include "train/trainer.h"

namespace shardlab {

namespace {
// Where this rank's configuration — flags, --config file, a checkpoint's settings — differs from rank 0's, or ""
// (collective over the world).
std::string settings_differ(const TrainConfig& cfg, const Runtime& rt) {
  const nlohmann::json mine = cfg.to_json();
  const auto text = [](const nlohmann::json& j) {  // a path that is not UTF-8 is shown, never thrown on
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  };
  const std::string root = rt.agree(text(mine));
  if (root == text(mine)) return "";
  const nlohmann::json theirs = nlohmann::json::parse(root);
  const nlohmann::json patch = nlohmann::json::diff(theirs, mine);  // from rank 0's to this rank's
  const std::string key = patch.empty() ? "" : patch[0].value("path", "");
  const nlohmann::json::json_pointer at(key);
  const auto shown = [&at](const nlohmann::json& j) { return j.contains(at) ? j.at(at).dump() : "nothing"; };
  return "its settings differ from rank 0's: " + (key.empty() ? std::string("?") : key.substr(1)) + " is " +
         shown(mine) + " here, " + shown(theirs) +
         " on rank 0 (a --config file, a checkpoint or the environment that is not the same for every rank)";
}
}  // namespace

int train_command(const CommandArgs& args, const Runtime& rt) {
  const std::string me = "shardlab train";
  TrainConfig cfg;
  Flags flags(me, "Train the GPT on the data file, on one process or under mpirun on several ranks (layout flags).");
  add_train_flags(flags, cfg);
  if (int rc = parse_command(flags, args, rt, me); rc >= 0) return rc;
  // Each check below is settled by every rank together (cli/command.h refuse_together): whichever rank refuses,
  // the job ends with its one line.
  std::string err;
  int64_t resume_step = 0;
  cfg.run_id = rt.agree(rt.is_root() ? new_run_id() : "");
  CheckpointHold resume_hold;  // the step resumed from, kept from pruning until the trainer has loaded it
  std::string warning;
  int code = 2;
  if (!cfg.outputs.resume.empty()) {
    try {
      // Reads and verifies the checkpoint on every rank alike.
      err = resolve_resume(args, cfg, resume_step, warning, resume_hold);
    } catch (const std::exception& e) {
      err = e.what();
      code = 1;  // a bad file, like eval's and sample's
    }
  }
  if (int rc = refuse_together(rt, me, err, code); rc >= 0) return rc;
  if (int rc = refuse_together(rt, me, settings_differ(cfg, rt), 2); rc >= 0) return rc;
  if (!warning.empty() && rt.is_root()) print_line(me, "warning", warning);
  err = validate_train_config(cfg);
  if (err.empty()) err = validate_world(cfg, rt.size());
  if (int rc = refuse_together(rt, me, err, 2); rc >= 0) return rc;
  if (rt.is_root() && (cfg.layout.zero > 0 || cfg.layout.fsdp) && cfg.layout.dp_size(rt.size()) == 1)
    std::fprintf(stderr, "shardlab train: warning: --zero/--fsdp with one data-parallel rank shards nothing\n");
  if (const std::string bubble = pipeline_bubble_warning(cfg, rt.size()); rt.is_root() && !bubble.empty())
    print_line(me, "warning", bubble);
  // Every rank reads the data (it may not be the same file on every host).
  std::unique_ptr<TextData> data;
  err.clear();
  try {
    data = std::make_unique<TextData>(cfg.run.data, cfg.model.seq, cfg.model.vocab);
  } catch (const std::exception& e) {
    err = e.what();
  }
  if (int rc = refuse_together(rt, me, err, 1); rc >= 0) return rc;
  err = check_memory(cfg, rt.size(), double(data->train_bytes() + data->val_bytes()));
  if (int rc = refuse_together(rt, me, err, 2); rc >= 0) return rc;
  // Rank 0 writes every file, so it claims the directories (and holds their locks until the run ends).
  RunDirs dirs;
  err = rt.agree(rt.is_root() ? dirs.claim(cfg, resume_step, {cfg.run.data, flags.config_path()}) : "");
  if (int rc = refuse_together(rt, me, err, 2); rc >= 0) return rc;
  if (flags.given("--comm-timeout")) set_comm_timeout(cfg.run.comm_timeout);  // else $SHARDLAB_COMM_TIMEOUT or 120 s
  return train(cfg, resume_step, *data, resume_hold);
}

}  // namespace shardlab
