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

namespace shardlab {

class Flags;

struct TrainConfig {
  GPTConfig model;
  int micro_batch = 32;
  int global_batch = 32;
  // optimizer
  std::string optimizer = "adamw";  // adamw | sgd
  double lr = 4e-3;
  std::string lr_schedule = "cosine";  // constant | cosine
  int warmup = 20;
  double min_lr_ratio = 0.1;  // cosine decays to lr · ratio
  double weight_decay = 0.1;
  double beta1 = 0.9, beta2 = 0.95, eps = 1e-8;
  double momentum = 0.9;  // SGD
  double clip = 1.0;      // max global grad norm; 0 = no clipping
  // precision
  std::string dtype = "f32";              // f32 | f64 (compute type)
  std::string mixed = "none";             // none | bf16
  std::string grad_accum_dtype = "bf16";  // bf16 | fp32 (with --mixed bf16)
  std::string master = "fp32";            // fp32 | none (with --mixed bf16)
  // activations
  std::string attention = "naive";  // naive | flash
  std::string recompute = "none";   // none | selective | full
  // run
  uint64_t seed = 1234;
  int steps = 300;
  std::string data = "data/corpus.txt";
  int eval_every = 50;            // 0 = never (a final eval still runs unless eval_windows = 0)
  int eval_windows = 64;          // validation windows per eval
  std::string out;                // DIR for loss.csv and ledger.json
  std::string save;               // DIR for checkpoints
  int save_every = 0;             // 0 = only at the end (when --save is given)
  std::string resume;             // DIR to resume from (its latest)
  std::string progress = "auto";  // auto | bar | lines | none
  // parallel layout (data-parallel family)
  int dp = 0;                      // data-parallel ranks; 0 = what the other axes leave of the world
  int tp = 1;                      // tensor-parallel ranks (Megatron: heads and MLP width split over them)
  bool sequence_parallel = false;  // with tp > 1: LayerNorm, dropout and residual regions split along the sequence
  int pp = 1;                      // pipeline stages
  std::string pp_layers;           // layers per stage, "3,5,…" (default: balanced)
  std::string schedule = "1f1b";   // gpipe | 1f1b | interleaved
  int virtual_stages = 1;          // model chunks per stage (interleaved)
  int zero = 0;                    // ZeRO stage 0..3
  std::string fsdp = "none";       // none | full | grad_op | no_shard | hybrid
  double bucket_mb = 1.0;          // gradient bucket size for DP's overlapped all-reduce
  std::string overlap = "on";      // on | off: sync gradients during backward
  std::string prefetch = "on";     // on | off: ZeRO-3 gathers the next unit while this one computes
  std::string comm = "ring";       // ring (hand-written) | mpi (MPI's built-ins)
  int ranks_per_node = 0;          // simulate nodes of K ranks; 0 = real shared-memory nodes
  std::string trace = "off";       // on | off: write DIR/trace.json (needs --out)
  bool overwrite = false;          // replace another run's files in --out / --save
  int keep_last = 0;               // keep the newest K checkpoints; 0 = all
  bool force_memory = false;       // start even if the estimate exceeds the machine's memory
  double comm_timeout = 120;       // seconds a rank waits for a peer before the job ends naming it; 0 = never
  // Not a flag: the run's identity (train/run_dirs.h), new for a fresh run, kept by a resume.
  std::string run_id;

  int accumulation_steps() const { return global_batch / micro_batch; }
  ActivationPolicy activation_policy() const;
  ModelSlice slice(int tp_rank) const { return ModelSlice{tp, tp_rank, sequence_parallel}; }
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

}  // namespace shardlab
