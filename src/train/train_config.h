// Everything `shardlab train` can be told: the fields with their defaults, the one definition of the
// flags (add_train_flags, grouped as --help shows them), validation, and the config's text forms
// (config.json and checkpoints' meta.json; config.toml, which --config reads back).
// Defaults train a 4-layer, 128-wide byte-level GPT (context 64) on data/corpus.txt in about a minute
// on one core, to a validation loss near 1.1 nats/byte (the corpus's unigram entropy is 3.2).
// Nothing here exits: errors are one sentence, which the command prints once (rank 0) with exit 2.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "model/activation_policy.h"
#include "model/config.h"
#include "optim/recipe.h"
#include "parallel/layout.h"
#include "report/progress.h"

namespace shardlab {

class Flags;

// What a run carries over when it resumes (with the model and the recipe).
struct RunSettings {
  uint64_t seed = 1234;
  int steps = 300;
  std::string data = "data/corpus.txt";
  int eval_every = 50;    // 0 = never (a final eval still runs unless eval_windows = 0)
  int eval_windows = 64;  // validation windows per eval
  ProgressMode progress = ProgressMode::automatic;
  double comm_timeout = 120;  // seconds a rank waits for a peer before the job ends naming it; 0 = never
};

// Where this command writes and reads: never carried over by a resume (a run writes only where its own
// command line says).
struct OutputSettings {
  std::string out;            // DIR for loss.csv and ledger.json
  std::string save;           // DIR for checkpoints
  int save_every = 0;         // 0 = only at the end (when --save is given)
  std::string resume;         // DIR to resume from (its latest)
  int keep_last = 0;          // keep the newest K checkpoints; 0 = all
  bool overwrite = false;     // replace another run's files in --out / --save
  bool trace = false;         // write DIR/trace.json (needs --out)
  bool force_memory = false;  // start even if the estimate exceeds the machine's memory
};

// The run: each part typed and owned by the layer that reads it.
struct TrainConfig {
  GPTConfig model;
  int micro_batch = 32;
  int global_batch = 32;
  Recipe recipe = pure_f32();   // precision and which optimizer states (optim/recipe.h)
  OptimizerSettings optimizer;  // lr schedule and hyperparameters
  Recompute recompute = Recompute::none;
  AttentionKernel attention = AttentionKernel::naive;
  ParallelLayout layout;  // parallel/layout.h
  RunSettings run;
  OutputSettings outputs;
  // Not a flag: the run's identity (train/run_dirs.h), new for a fresh run, kept by a resume.
  std::string run_id;

  static Recipe pure_f32() {
    Recipe r;
    r.mixed = Mixed::none;
    return r;
  }
  int accumulation_steps() const { return global_batch / micro_batch; }
  ActivationPolicy activation_policy() const { return ActivationPolicy{recipe.bf16(), recompute, attention}; }
  ModelSlice slice(int tp_rank, int cp_rank = 0, int ep_rank = 0) const {
    return layout.slice(tp_rank, cp_rank, ep_rank);
  }
  nlohmann::json to_json() const;
  static TrainConfig from_json(const nlohmann::json& j);  // inverse of to_json; throws on a bad config
  std::string to_toml() const;                            // what --config reads
};

// Every train flag, bound to the fields of cfg, in its help group, and --config FILE (a TOML file of the
// same flags, e.g. a run's DIR/config.toml; flags on the command line override it).
void add_train_flags(Flags& flags, TrainConfig& cfg);
// The flags `shardlab bench` takes: the model, the micro-batch, precision, activations, seed, steps.
void add_bench_flags(Flags& flags, TrainConfig& cfg);
// Parse `train` flags (and the --config file they name) onto cfg; args exclude the command.
// "" on success, else one sentence naming the flag.
std::string parse_train_args(const std::vector<std::string>& args, TrainConfig& cfg);
// Checks that need no data: sizes, divisibility, names. "" when valid.
std::string validate_train_config(const TrainConfig& cfg);
// Checks that depend on the number of ranks (the grid, divisibility of the batch, hybrid nodes).
std::string validate_world(const TrainConfig& cfg, int world);
// For a valid layout: a pipeline with fewer micro-batches per step m than stages p leaves most of every
// stage idle — one line saying m, p, the bubble (p−1)/(m+p−1) and the flags that raise m; "" when m ≥ p.
std::string pipeline_bubble_warning(const TrainConfig& cfg, int world);

}  // namespace shardlab
