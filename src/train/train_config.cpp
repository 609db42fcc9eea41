// The train flags, validation and the text forms of TrainConfig (see train_config.h).
#include "train/train_config.h"

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <system_error>

#include "core/flags.h"
#include "parallel/pipeline_partition.h"
#include "parallel/schedule.h"
#include "train/exact_cp_rules.h"

namespace shardlab {

namespace {

std::string ranks(int n) { return std::to_string(n) + (n == 1 ? " rank" : " ranks"); }

void model_flags(Flags& f, TrainConfig& c) {
  f.group("Model");
  f.add("--layers", c.model.layers, "transformer blocks L");
  f.add("--hidden", c.model.hidden, "hidden size C");
  f.add("--heads", c.model.heads, "attention heads NH");
  f.add("--seq", c.model.seq, "sequence length T");
  f.add("--vocab", c.model.vocab, "vocabulary size (tokens are bytes)");
  f.add("--dropout", c.model.dropout, "dropout probability");
  f.group("Mixture of experts");
  MoeConfig& m = c.model.moe;
  f.add("--moe-experts", m.experts, "experts E in place of the MLP of every --moe-every-th block (0: dense MLPs)");
  f.add("--moe-top-k", m.top_k, "experts per token k (gates renormalised over the k chosen)");
  f.add("--moe-every", m.every, "MoE in blocks l with l % n == 0 (1: every block)");
  f.add("--moe-ffn", m.ffn, "each expert's MLP width (0: 4·hidden)");
  f.add("--moe-capacity", m.capacity,
        "keep at most ceil(seq·k/E·factor) slots per expert per sample, dropping later positions (0: dropless)");
  f.add("--moe-aux-loss", m.aux_loss, "α of the load-balancing loss α·E·Σ f_i·P_i per sample and MoE block");
  f.add("--moe-z-loss", m.z_loss, "β of the router z-loss β·mean(logsumexp(logits)²) per MoE block");
}

void precision_flags(Flags& f, TrainConfig& c) {
  f.group("Precision");
  f.choice("--dtype", c.recipe.dtype, kDtypeWords, "compute type");
  f.choice("--mixed", c.recipe.mixed, kMixedWords, "bf16: bf16 params and grads, fp32 optimizer states");
  f.choice("--grad-accum-dtype", c.recipe.grad_accum, kGradAccumWords, "gradient storage with --mixed bf16");
  f.choice("--master", c.recipe.master, kMasterWords, "fp32 master weights with --mixed bf16");
  f.group("Activations");
  f.choice("--attention", c.attention, kAttentionWords,
           "attention kernel: naive keeps the s×s probabilities, flash only a log-sum-exp (flash's curve agrees "
           "with naive's within the tolerance, not bit for bit: its softmax adds in another order)");
  f.choice("--recompute", c.recompute, kRecomputeWords,
           "recompute in backward: selective the attention probabilities, full each block's forward");
}

}  // namespace

void add_bench_flags(Flags& f, TrainConfig& c) {
  model_flags(f, c);
  f.group("Batch");
  f.add("--micro-batch", c.micro_batch, "samples per forward/backward");
  precision_flags(f, c);
  f.group("Run");
  f.add("--seed", c.run.seed, "random seed: weights and tokens");
  f.add("--steps", c.run.steps, "timed steps (after one warm-up step)");
  f.flag("--force-memory", c.outputs.force_memory, "start even when the memory estimate exceeds what the machine has");
}

void add_train_flags(Flags& f, TrainConfig& c) {
  model_flags(f, c);
  f.group("Batch");
  f.add("--micro-batch", c.micro_batch, "samples per forward/backward");
  f.add("--global-batch", c.global_batch, "samples per optimizer step (a multiple of micro-batch × dp)");
  f.group("Optimizer");
  f.choice("--optimizer", c.recipe.optimizer, kTrainedOptimizerWords, "optimizer");
  f.add("--lr", c.optimizer.lr, "peak learning rate");
  f.choice("--lr-schedule", c.optimizer.schedule, kLrScheduleWords, "learning-rate schedule after warmup");
  f.add("--warmup", c.optimizer.warmup, "linear warmup steps");
  f.add("--min-lr-ratio", c.optimizer.min_lr_ratio, "cosine floor as a fraction of --lr");
  f.add("--weight-decay", c.optimizer.weight_decay, "decoupled weight decay on matrices and embeddings");
  f.add("--beta1", c.optimizer.beta1, "AdamW beta1");
  f.add("--beta2", c.optimizer.beta2, "AdamW beta2");
  f.add("--eps", c.optimizer.eps, "AdamW epsilon");
  f.add("--momentum", c.recipe.momentum, "SGD momentum; 0 keeps no state");
  f.add("--clip", c.optimizer.clip, "clip the global gradient norm to this; 0 = off");
  precision_flags(f, c);
  f.group("Layout");
  f.add("--dp", c.layout.dp, "data-parallel ranks (0: what the other axes leave of the world)");
  f.add("--tp", c.layout.tp, "tensor-parallel ranks: each holds heads/t heads and 4·hidden/t of the MLP");
  f.flag("--sequence-parallel", c.layout.sequence_parallel,
         "with --tp > 1: split LayerNorm, dropout and residual activations along the sequence too");
  f.add("--pp", c.layout.pp, "pipeline stages: consecutive layers per stage, embedding on the first, head on the last");
  f.add("--cp", c.layout.cp,
        "context-parallel ranks: each holds 1/c of every sample's tokens; K/V go round a ring (needs --attention "
        "flash; with --exact: whole samples inside the layers, no ring)");
  f.add("--ep", c.layout.ep,
        "expert-parallel ranks: each holds E/ep of every MoE block's experts and its own samples; tokens reach their "
        "experts by all-to-all (needs --moe-experts)");
  f.choice("--cp-split", c.layout.cp_split, kContextSplitWords,
           "which tokens a cp rank holds: zigzag (chunks r and 2c−1−r: equal causal work) or contiguous");
  f.add(
      "--pp-layers", [&c] { return layer_counts_text(c.layout.pp_layers); },
      [&c](const std::string& text) { return parse_layer_counts(text, &c.layout.pp_layers); },
      "layers per stage, e.g. 3,5 (default: balanced)", "LIST");
  f.choice("--schedule", c.layout.schedule, kScheduleWords, "pipeline schedule");
  f.add("--virtual-stages", c.layout.virtual_stages, "model chunks per stage (--schedule interleaved)");
  f.add("--zero", c.layout.zero, "ZeRO stage 0 | 1 | 2 | 3");
  f.choice("--fsdp", c.layout.fsdp, kFsdpWords, "FSDP strategy (instead of --zero)");
  f.add("--bucket-mb", c.layout.bucket_mb, "DP gradient bucket size in MB");
  f.choice("--overlap", c.layout.overlap, kOnOffWords, "sync gradients during backward");
  f.choice("--prefetch", c.layout.prefetch, kOnOffWords, "ZeRO-3 gathers the next unit while this one computes");
  f.choice("--comm", c.layout.comm, kCommImplWords, "hand-written rings or MPI's built-in collectives");
  f.flag("--exact", c.layout.exact,
         "every layout reproduces the single process bit for bit: products one sample at a time, every sum across "
         "samples, micro-batches and ranks order-free (core/exact_sum.h)");
  f.add("--ranks-per-node", c.layout.ranks_per_node, "simulate nodes of K consecutive ranks (0: real nodes)");
  f.add("--comm-timeout", c.run.comm_timeout,
        "seconds a rank waits for a peer before the job ends naming the rank that never arrived (0: never; "
        "default: $SHARDLAB_COMM_TIMEOUT, else 120)");
  f.group("Run");
  f.add("--seed", c.run.seed, "random seed: weights, batches and dropout");
  f.add("--steps", c.run.steps, "total optimizer steps");
  f.add("--data", c.run.data, "training text file (bytes are tokens)", "FILE");
  f.add("--eval-every", c.run.eval_every, "validation loss every N steps (0: only at the end)");
  f.add("--eval-windows", c.run.eval_windows, "validation windows per evaluation");
  f.choice("--progress", c.run.progress, kProgressWords, "progress display (auto: a bar on a terminal)");
  f.flag("--force-memory", c.outputs.force_memory, "start even when the memory estimate exceeds what the machine has");
  f.group("Outputs");
  f.add("--out", c.outputs.out, "write loss.csv, loss.svg, ledger.json and the config into DIR", "DIR");
  f.add("--save", c.outputs.save, "write checkpoints into DIR", "DIR");
  f.add("--save-every", c.outputs.save_every, "checkpoint every N steps (0: at the end only)");
  f.add("--resume", c.outputs.resume, "continue from a checkpoint (DIR/latest or a step directory)", "DIR");
  f.add("--keep-last", c.outputs.keep_last, "keep only the newest K checkpoints in --save (0: keep all)");
  f.flag("--overwrite", c.outputs.overwrite,
         "replace the files of another run in --out and --save (never files shardlab did not write)");
  f.choice("--trace", c.outputs.trace, kOnOffWords, "write DIR/trace.json, a per-rank timeline (needs --out)");
  f.config_file("--config", "read flags from a TOML file (a run's DIR/config.toml); flags given here override it");
}

std::string parse_train_args(const std::vector<std::string>& args, TrainConfig& cfg) {
  Flags f("shardlab train", "");
  add_train_flags(f, cfg);
  ParseResult r = f.parse(args);
  return r.kind == ParseResult::error ? r.message : "";
}

std::string validate_train_config(const TrainConfig& c) {
  std::string e = c.model.validate();
  if (!e.empty()) return e;
  if (c.micro_batch <= 0 || c.global_batch <= 0) return "--micro-batch and --global-batch must be positive";
  if (c.global_batch % c.micro_batch != 0)
    return "--global-batch " + std::to_string(c.global_batch) + " is not a multiple of --micro-batch " +
           std::to_string(c.micro_batch);
  if (c.run.steps <= 0) return "--steps must be positive";
  if (!(c.optimizer.lr > 0)) return "--lr must be positive";
  if (c.optimizer.warmup < 0 || c.run.eval_every < 0 || c.run.eval_windows < 0 || c.outputs.save_every < 0 ||
      c.outputs.keep_last < 0)
    return "--warmup, --eval-every, --eval-windows, --save-every and --keep-last must not be negative";
  if (!(c.run.comm_timeout == 0 || c.run.comm_timeout >= 1))
    return "--comm-timeout must be 0 (wait for ever) or at least 1 second (a shorter one would end healthy jobs)";
  const OptimizerSettings& o = c.optimizer;
  if (o.clip < 0 || o.weight_decay < 0 || o.eps <= 0) return "--clip and --weight-decay must be ≥ 0 and --eps > 0";
  if (o.beta1 < 0 || o.beta1 >= 1 || o.beta2 < 0 || o.beta2 >= 1) return "--beta1 and --beta2 must be in [0, 1)";
  if (c.recipe.momentum < 0 || c.recipe.momentum >= 1) return "--momentum must be in [0, 1)";
  if (o.min_lr_ratio < 0 || o.min_lr_ratio > 1) return "--min-lr-ratio must be in [0, 1]";
  if (c.recipe.bf16() && c.recipe.dtype != Dtype::f32) return "--mixed bf16 computes in f32; drop --dtype f64";
  if (!c.recipe.bf16() && (c.recipe.grad_accum != GradAccum::bf16 || c.recipe.master != Master::fp32))
    return "--grad-accum-dtype and --master only apply with --mixed bf16";
  const ParallelLayout& l = c.layout;
  if (l.zero < 0 || l.zero > 3) return "--zero must be 0, 1, 2 or 3";
  if (l.zero != 0 && l.fsdp)
    return "--zero and --fsdp name the same thing; give one (fsdp full = zero 3, grad_op = zero 2, no_shard = zero 0)";
  if (l.dp < 0 || l.ranks_per_node < 0) return "--dp and --ranks-per-node must not be negative";
  if (std::string why = c.slice(0).validate(c.model); !why.empty()) return why;
  if (l.cp > 1 && c.attention == AttentionKernel::naive && !l.exact)
    return "--cp " + std::to_string(l.cp) +
           " runs ring attention: flash attention's online softmax over key blocks that arrive from the other cp "
           "ranks; the naive kernel needs each query's whole row of s scores on one rank, which no cp rank holds — "
           "add --attention flash";
  if (l.ep < 1) return "--ep must be at least 1";
  if (l.ep > 1) {
    const int E = c.model.moe.experts;
    if (!c.model.moe.on()) return "--ep " + std::to_string(l.ep) + " spreads experts over ranks: add --moe-experts E";
    if (E % l.ep != 0)
      return "--moe-experts " + std::to_string(E) + " is not divisible by --ep " + std::to_string(l.ep) +
             " (every ep rank holds E/ep whole experts)";
    if (l.strategy() == Strategy::hybrid)
      return "--fsdp hybrid shards inside a node and all-reduces across nodes; with --ep the experts' shards "
             "would need a third group: use --fsdp full or shard_grad_op (ZeRO-3, ZeRO-2) with --ep";
  }
  if (std::string why = l.exact ? exact_cp_problem(l.cp, c.micro_batch, l.sequence_parallel) : ""; !why.empty())
    return why;
  if (l.exact && c.model.vocab % c.model.heads != 0)
    return "--exact sums the LM head's input gradient over vocabulary chunks of V/heads: --vocab " +
           std::to_string(c.model.vocab) + " is not divisible by --heads " + std::to_string(c.model.heads);
  if (c.model.moe.on() && (l.cp > 1 || l.sequence_parallel))
    return std::string(l.cp > 1 ? "--cp" : "--sequence-parallel") +
           " splits a sample's tokens over ranks, but --moe-experts routes each sample's tokens as one group (its "
           "capacity and its load-balancing loss): run the experts without it";
  if (std::string why = pipeline_problem(c.model.layers, l.pp, l.virtual_stages, l.schedule, l.pp_layers); !why.empty())
    return why;
  if (!(l.bucket_mb > 0)) return "--bucket-mb must be positive";
  if (c.outputs.trace && c.outputs.out.empty()) return "--trace on writes DIR/trace.json: give --out DIR";
  for (const auto& [flag, dir] :
       {std::pair<const char*, const std::string*>{"--out", &c.outputs.out}, {"--save", &c.outputs.save}}) {
    if (dir->empty()) continue;
    std::error_code ec;  // never the library's own text: a name too long, a part of the path that is a file, …
    const std::filesystem::file_status st = std::filesystem::status(*dir, ec);
    if (ec && ec != std::errc::no_such_file_or_directory)
      return std::string(flag) + ": cannot create directory '" + *dir + "' (" + ec.message() + ")";
    if (std::filesystem::exists(st) && !std::filesystem::is_directory(st))
      return "'" + *dir + "' exists and is not a directory (--out and --save name directories)";
  }
  return "";
}

std::string validate_world(const TrainConfig& cfg, int world) {
  const ParallelLayout& l = cfg.layout;
  const int tp = l.tp, pp = l.pp, cp = l.cp, ep = l.ep, others = tp * pp * cp * ep;
  if (!l.dp && world % others != 0) {
    std::string axes;  // the axes given, as they multiply
    int named = 0;
    for (auto [name, n] : {std::pair<const char*, int>{"pp", pp}, {"cp", cp}, {"ep", ep}, {"tp", tp}})
      if (n > 1) axes += std::string(named++ ? " × " : "") + name + " " + std::to_string(n);
    axes = named == 1 ? "--" + axes : axes + " = " + std::to_string(others);
    return axes + " does not divide the world of " + ranks(world) + " (mpirun -np a multiple of " +
           std::to_string(others) + ")";
  }
  const int dp = l.dp_size(world);
  if (dp * others != world)
    return "--dp " + std::to_string(dp) + " × pp " + std::to_string(pp) + " × cp " + std::to_string(cp) + " × ep " +
           std::to_string(ep) + " × tp " + std::to_string(tp) + " = " + std::to_string(dp * others) +
           ", but the world has " + ranks(world) + " (mpirun -np " + std::to_string(dp * others) + ")";
  if (cfg.global_batch % (dp * ep * cfg.micro_batch) != 0)
    return "--global-batch " + std::to_string(cfg.global_batch) + " is not divisible by dp × " +
           (ep > 1 ? "ep × " : "") + "micro-batch = " + std::to_string(dp) + " × " +
           (ep > 1 ? std::to_string(ep) + " × " : "") + std::to_string(cfg.micro_batch);
  const int m = cfg.global_batch / (dp * ep * cfg.micro_batch);  // micro-batches per step
  if (l.schedule == ScheduleKind::interleaved && m % pp != 0)
    return "--schedule interleaved runs micro-batches in groups of pp: " + std::to_string(m) +
           " micro-batches per step (global-batch / (dp × micro-batch)) is not a multiple of --pp " +
           std::to_string(pp);
  if (int64_t(m) * pp * l.virtual_stages > kMaxPipelineSlots)
    return std::to_string(m) + " micro-batches × " + std::to_string(int64_t(pp) * l.virtual_stages) +
           " model chunks: too many pipeline messages to tell apart (m · pp · virtual-stages must be ≤ " +
           std::to_string(kMaxPipelineSlots) + ")";
  if (tp > 1 && l.ranks_per_node > 0 && l.ranks_per_node % tp != 0)
    return "--ranks-per-node " + std::to_string(l.ranks_per_node) +
           " would split tensor-parallel partners over nodes; " + "it must be a multiple of --tp " +
           std::to_string(tp) + " (tensor parallelism stays inside a node, C19)";
  const bool hybrid = l.strategy() == Strategy::hybrid;
  if (hybrid && pp > 1)
    return "--fsdp hybrid shards inside a node, and pipeline stages usually span nodes: use --zero 1, 2 or 3 with --pp";
  if (hybrid) {  // over the gradient group: the dp ranks, × cp with context parallelism (comm/process_grid.h)
    const int g = dp * cp, k = l.ranks_per_node / tp;  // the group's members, and its members per node
    if (dp < 2) return "--fsdp hybrid needs at least 2 data-parallel ranks (mpirun -np 4 … --ranks-per-node 2)";
    int p = 2;  // smallest factor of dp above 1: the most nodes a valid suggestion can have
    while (dp % p) ++p;
    if (k <= 0 || g % k != 0 || g / k < 2)
      return "--fsdp hybrid shards inside a node and replicates across nodes: it needs at least 2 nodes "
             "(e.g. --ranks-per-node " +
             std::to_string(g / p * tp) + " with " + std::to_string(g * tp) + " ranks)";
  }
  if (l.ranks_per_node > 0 && world % l.ranks_per_node != 0)
    return "--ranks-per-node " + std::to_string(l.ranks_per_node) + " does not divide the world size " +
           std::to_string(world);
  return "";
}

std::string pipeline_bubble_warning(const TrainConfig& cfg, int world) {
  const ParallelLayout& l = cfg.layout;
  const int p = l.pp, dp = l.data_ranks(world), per_rank = cfg.global_batch / dp, m = per_rank / cfg.micro_batch;
  if (p <= 1 || m >= p) return "";
  char bubble[32];
  std::snprintf(bubble, sizeof bubble, "%.1f%%", 100 * bubble_formula(l.schedule, p, m, l.virtual_stages));
  // m = p with the batch as it is: the largest micro-batch that still splits a rank's samples p ways.
  int b = per_rank / p;
  while (b > 0 && per_rank % b != 0) --b;
  const std::string smaller =
      b > 0 ? "--micro-batch " + std::to_string(b) + " (the same batch in smaller pieces) or " : "";
  return "--pp " + std::to_string(p) + " with " + std::to_string(m) + (m == 1 ? " micro-batch" : " micro-batches") +
         " per step (m = global-batch / (dp × micro-batch) = " + std::to_string(cfg.global_batch) + " / (" +
         std::to_string(dp) + " × " + std::to_string(cfg.micro_batch) + ")) < p = " + std::to_string(p) +
         ": the bubble (p−1)/(m+p−1) leaves " + bubble + " of every stage idle; raise m to p or more with " + smaller +
         "--global-batch " + std::to_string(p * dp * cfg.micro_batch);
}

nlohmann::json TrainConfig::to_json() const {
  TrainConfig copy = *this;
  Flags f("shardlab train", "");
  add_train_flags(f, copy);
  return f.to_json();
}

std::string TrainConfig::to_toml() const {
  TrainConfig copy = *this;
  Flags f("shardlab train", "");
  add_train_flags(f, copy);
  return "# The resolved configuration of a shardlab train run. `shardlab train --config FILE --out NEW_DIR` runs\n"
         "# it again (flags on the command line override the file); where it wrote is shown, not read back.\n" +
         f.to_toml({"--out", "--save", "--overwrite"});
}

TrainConfig TrainConfig::from_json(const nlohmann::json& j) {
  TrainConfig c;
  Flags f("shardlab train", "");
  add_train_flags(f, c);
  if (std::string err = f.read_json(j); !err.empty()) throw std::runtime_error("not a configuration of train: " + err);
  return c;
}

}  // namespace shardlab
