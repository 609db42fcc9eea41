// The run's outputs, with one owner outside the training loop: when the run starts, config.json and
// config.toml (which `--config` reads back) and a fresh or continued loss.csv; after every step, its
// loss.csv row, the progress display and, at their cadence, checkpoints; when it ends, loss.svg,
// ledger.json, schedule.svg (pipelines), trace.json and the closing summary. The loop only hands over each step's
// numbers, so schedules can reorder forward and backward work without touching any output code. Rank 0 writes the
// files; saving a checkpoint and gathering ledgers and traces are collective.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "comm/comm_ledger.h"
#include "comm/communicator.h"
#include "comm/trace.h"
#include "core/ledger.h"
#include "io/loss_log.h"
#include "report/progress.h"
#include "train/moe_load.h"
#include "train/run_report.h"
#include "train/train_config.h"

namespace shardlab {

// Everything a run books: memory, and communication apart for training steps, evaluation and checkpoint
// saving (so `plan --ledger` can check a step's traffic exactly), and the timeline.
struct RunLedgers {
  MemoryLedger memory;
  CommLedger comm, comm_eval, comm_checkpoint;
  Trace trace;
  explicit RunLedgers(bool tracing) : trace(tracing) {}
};

// One optimizer step's numbers, as loss.csv records them.
struct StepStats {
  int step;
  double loss, grad_norm, lr, ms;
  std::optional<double> val_loss;
  std::optional<MoeStepLoad> moe;  // a model with experts: what they were routed (train/moe_load.h)
};

class RunOutputs {
 public:
  // save_checkpoint(step) saves the run's states (collective) into cfg.outputs.save.
  RunOutputs(const TrainConfig& cfg, int64_t resume_step, double tokens_per_step, Communicator& world,
             RunLedgers& ledgers, std::function<void(int64_t)> save_checkpoint);
  // Prints the run's header (rank 0), writes the config files and opens loss.csv.
  void begin(const std::string& header);
  void step_done(const StepStats& s);
  // The run stopped early: ends the progress line; every file written so far stays.
  void abandon();
  // The run ended: pictures, ledgers, trace, summary.
  void finish(const RunLayout& layout, size_t params);

 private:
  const TrainConfig& cfg_;
  int64_t resume_step_;
  Communicator& world_;
  RunLedgers& ledgers_;
  std::function<void(int64_t)> save_;
  bool root_;
  Progress progress_;
  std::unique_ptr<LossLog> log_, moe_log_;  // loss.csv; moe_load.csv (a model with experts)
  double last_loss_ = std::nan("");         // no step yet
  std::optional<double> last_val_;
};

}  // namespace shardlab
