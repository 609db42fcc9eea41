// The run's outputs (see run_outputs.h).
#include "train/run_outputs.h"

#include <cmath>
#include <cstdio>

#include "core/paths.h"
#include "io/checkpoint.h"
#include "io/json_file.h"
#include "io/owned_files.h"
#include "report/plot.h"
#include "report/schedule_svg.h"

namespace shardlab {

RunOutputs::RunOutputs(const TrainConfig& cfg, int64_t resume_step, double tokens_per_step, Communicator& world,
                       RunLedgers& ledgers, std::function<void(int64_t)> save_checkpoint)
    : cfg_(cfg),
      resume_step_(resume_step),
      world_(world),
      ledgers_(ledgers),
      save_(std::move(save_checkpoint)),
      root_(world.rank() == 0),
      progress_(root_ ? cfg.run.progress : ProgressMode::none, static_cast<int>(resume_step), cfg.run.steps,
                tokens_per_step) {}

void RunOutputs::begin(const std::string& header) {
  if (!root_) return;
  std::printf("%s\n", header.c_str());
  if (cfg_.outputs.out.empty()) return;
  // The directory was claimed (train/run_dirs.h): its loss.csv continues only if it is this run's own.
  const std::string previous = cfg_.outputs.out + "/config.json";
  const nlohmann::json before = input_file_problem(previous).empty()
                                    ? parse_json_or_discarded(read_file(previous, size_t(16) << 20))
                                    : nlohmann::json();
  const bool own = before.is_object() && before.value("run_id", "") == cfg_.run_id;
  // This run writes a new ledger.json; a trace.json or schedule.svg of before (another run replaced with
  // --overwrite, or this run's earlier part, maybe on another layout) would no longer match it: removed if
  // shardlab wrote it, left alone if somebody else did (io/owned_files.h; the claim refused the run if it
  // writes one of them itself).
  for (const char* f : {"/trace.json", "/schedule.svg"}) remove_owned_file(cfg_.outputs.out + f);
  if (!cfg_.model.moe.on())  // nor would an earlier run's expert load
    for (const char* f : {"/moe_load.csv", "/moe_load.svg"}) remove_owned_file(cfg_.outputs.out + f);
  nlohmann::json config = cfg_.to_json();
  config["run_id"] = cfg_.run_id;
  write_owned_file(cfg_.outputs.out + "/config.json", config.dump(2) + "\n");
  write_owned_file(cfg_.outputs.out + "/config.toml", cfg_.to_toml());
  const int kept = own ? static_cast<int>(resume_step_) : 0;
  const bool moe = cfg_.model.moe.on();
  log_ = std::make_unique<LossLog>(cfg_.outputs.out + "/loss.csv", cfg_.recipe.f64(), kept,
                                   moe ? kMoeLossColumns : std::vector<std::string>{});
  if (moe)
    moe_log_ = std::make_unique<LossLog>(cfg_.outputs.out + "/moe_load.csv", cfg_.recipe.f64(), kept,
                                         std::vector<std::string>{}, moe_load_header(cfg_.model.moe.experts));
}

void RunOutputs::step_done(const StepStats& s) {
  if (log_)
    log_->row(s.step, s.loss, s.grad_norm, s.lr, s.ms, s.val_loss, s.moe ? s.moe->columns() : std::vector<double>{});
  if (moe_log_ && s.moe) moe_log_->line(s.step, moe_load_rows(s.step, *s.moe));
  progress_.step(s.step, s.loss, s.val_loss);
  last_loss_ = s.loss;
  if (s.val_loss) last_val_ = s.val_loss;
  const bool due = (cfg_.outputs.save_every > 0 && s.step % cfg_.outputs.save_every == 0) || s.step == cfg_.run.steps;
  if (cfg_.outputs.save.empty() || !due) return;
  save_(s.step);
  if (root_) prune_checkpoints(cfg_.outputs.save, cfg_.outputs.keep_last);
  if (root_ && cfg_.run.progress != ProgressMode::none && cfg_.outputs.save_every > 0 && s.step != cfg_.run.steps) {
    progress_.finish();
    std::printf("saved %s/%s\n", cfg_.outputs.save.c_str(), step_dir_name(s.step).c_str());
  }
}

void RunOutputs::abandon() { progress_.finish(); }

void RunOutputs::finish(const RunLayout& layout, size_t params) {
  progress_.finish();
  nlohmann::json ledger;
  if (!cfg_.outputs.out.empty()) {
    if (root_) write_owned_file(cfg_.outputs.out + "/loss.svg", plot_runs({cfg_.outputs.out}, "loss"));
    if (root_ && moe_log_)
      write_owned_file(cfg_.outputs.out + "/moe_load.svg", moe_load_svg(cfg_.outputs.out + "/moe_load.csv"));
    std::vector<SchedulePanel> schedule;
    ledger = write_ledger_file(cfg_.outputs.out + "/ledger.json", cfg_, params, layout, ledgers_.memory, ledgers_.comm,
                               ledgers_.comm_eval, ledgers_.comm_checkpoint, world_, &schedule);
    if (root_ && !schedule.empty())
      write_owned_file(cfg_.outputs.out + "/schedule.svg", schedule_svg(schedule, cfg_.layout.virtual_stages));
    if (ledgers_.trace.enabled()) write_trace_file(cfg_.outputs.out + "/trace.json", ledgers_.trace, world_);
  }
  if (!root_) return;
  print_summary(cfg_, params, layout, ledgers_.memory, ledgers_.comm, progress_, last_loss_, last_val_, ledger);
  if (!cfg_.outputs.out.empty()) {
    const std::string trace =
        ledgers_.trace.enabled() ? " and " + cfg_.outputs.out + "/trace.json (open in ui.perfetto.dev)" : "";
    std::printf("wrote %s/loss.csv, loss.svg, config.toml%s%s and ledger.json%s\n", cfg_.outputs.out.c_str(),
                ledger.contains("pipeline") ? ", schedule.svg" : "", moe_log_ ? ", moe_load.csv, moe_load.svg" : "",
                trace.c_str());
  }
  if (!cfg_.outputs.save.empty())
    std::printf("checkpoint %s/latest -> %s\n", cfg_.outputs.save.c_str(), step_dir_name(cfg_.run.steps).c_str());
}

}  // namespace shardlab
