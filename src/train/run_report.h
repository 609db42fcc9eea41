// What a training run reports when it ends: ledger.json (every rank's memory and comm ledgers — training's
// traffic under "comm", evaluation's under "comm_eval", checkpoint saving's under "comm_checkpoint" —
// gathered to rank 0), trace.json (every
// rank's timeline), and the closing summary rank 0 prints.
#pragma once
#include <optional>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "comm/comm_ledger.h"
#include "comm/process_grid.h"
#include "comm/trace.h"
#include "core/ledger.h"
#include "optim/shard_layout.h"
#include "optim/strategy.h"
#include "report/progress.h"
#include "report/schedule_svg.h"
#include "train/train_config.h"

namespace shardlab {

struct RunLayout {  // the layout facts ledger.json records and `plan --ledger` checks
  Strategy strategy;
  int dp, ranks_per_node;
  ShardLayout shards;  // the shard group's geometry
  int accum, steps;    // micro-batches per step, steps this run trained
  // Pipelines (report/pipeline_report.h): the run's facts and this rank's measured step (null: no pipeline).
  nlohmann::json pipeline, pipeline_rank;
  // Experts (train/moe_load.h, parallel/expert_parallel.h): the run's routing summed over its steps, and this
  // rank's exchanges (null: no experts).
  nlohmann::json moe, moe_rank;
};

// Collective: gathers every rank's ledgers; rank 0 writes DIR/ledger.json and returns the ledger (null
// on the other ranks). For a pipeline, rank 0 also gets the pictures of the step (measured above the
// schedule's ideal) into *schedule, for DIR/schedule.svg.
nlohmann::json write_ledger_file(const std::string& path, const TrainConfig& cfg, size_t params,
                                 const RunLayout& layout, const MemoryLedger& memory, const CommLedger& comm,
                                 const CommLedger& eval_comm, const CommLedger& checkpoint_comm, Communicator& world,
                                 std::vector<SchedulePanel>* schedule);
// Collective: gathers every rank's trace events; rank 0 writes DIR/trace.json.
void write_trace_file(const std::string& path, const Trace& trace, Communicator& world);
// The model's size, and rank 0's part of it when a layout splits the model (tensor or pipeline parallel):
// "1,234,567 params" or "1,234,567 params (617,000 on rank 0: its tp slice of its pp stage)". The run
// header and the closing summary say it alike.
std::string params_text(const TrainConfig& cfg, size_t rank0_params);
// Rank 0's closing summary.
// ledger: what write_ledger_file returned (its pipeline section is summarised), or null.
void print_summary(const TrainConfig& cfg, size_t params, const RunLayout& layout, const MemoryLedger& memory,
                   const CommLedger& comm, const Progress& progress, double last_loss, std::optional<double> last_val,
                   const nlohmann::json& ledger = nullptr);

}  // namespace shardlab
