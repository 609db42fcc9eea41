// The training loop (see trainer.h).
#include "train/trainer.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include "core/ledger.h"
#include "model/gpt.h"
#include "optim/lr_schedule.h"
#include "train/data.h"
#include "train/evaluate.h"
#include "train/loss_log.h"
#include "train/model_states.h"
#include "train/progress.h"
#include "train/train_checkpoint.h"
#include "train/plot.h"
#include "train/run_report.h"
#include "parallel/data_parallel.h"
#include "comm/process_grid.h"
#include "train/checkpoint.h"

namespace shardlab {

namespace {

// Checks that depend on the number of ranks. "" when valid.
std::string validate_world(const TrainConfig& cfg, int world) {
  const int dp = cfg.dp ? cfg.dp : world;
  if (dp != world)
    return "--dp " + std::to_string(dp) + " × tp 1 × pp 1 × cp 1 × ep 1 = " + std::to_string(dp) + ", but the world has " +
           std::to_string(world) + " ranks (mpirun -np " + std::to_string(dp) + ")";
  if (cfg.global_batch % (dp * cfg.micro_batch) != 0)
    return "--global-batch " + std::to_string(cfg.global_batch) + " is not divisible by dp × micro-batch = " +
           std::to_string(dp) + " × " + std::to_string(cfg.micro_batch);
  if (cfg.fsdp == "hybrid") {
    const int k = cfg.ranks_per_node;
    if (dp < 2) return "--fsdp hybrid needs at least 2 data-parallel ranks (mpirun -np 4 … --ranks-per-node 2)";
    int p = 2;  // smallest factor of dp above 1: the most nodes a valid suggestion can have
    while (dp % p) ++p;
    if (k <= 0 || dp % k != 0 || dp / k < 2)
      return "--fsdp hybrid shards inside a node and replicates across nodes: it needs at least 2 nodes "
             "(e.g. --ranks-per-node " + std::to_string(dp / p) + " with " + std::to_string(dp) + " ranks)";
  }
  if (cfg.ranks_per_node > 0 && world % cfg.ranks_per_node != 0)
    return "--ranks-per-node " + std::to_string(cfg.ranks_per_node) + " does not divide the world size " + std::to_string(world);
  return "";
}

// Resuming starts from the checkpoint's config; flags given now override it, except the ones that
// define the model states, which must match.
std::string apply_resume(const std::vector<std::string>& args, TrainConfig& cfg, int64_t& resume_step) {
  TrainConfig ck = checkpoint_config(cfg.resume, &resume_step);
  TrainConfig merged = ck;
  const TrainConfig fresh;  // checkpoints hold whole tensors: the layout is the new run's to choose
  merged.dp = fresh.dp;
  merged.zero = fresh.zero;
  merged.fsdp = fresh.fsdp;
  merged.ranks_per_node = fresh.ranks_per_node;
  std::string err = parse_train_args(args, merged);
  if (!err.empty()) return err;
  auto same = [&](bool eq, const char* flag) { return eq ? std::string() : std::string("--resume: ") + flag + " differs from the checkpoint's; a resumed run keeps the model states it saved"; };
  for (const std::string& e :
       {same(merged.model.layers == ck.model.layers && merged.model.hidden == ck.model.hidden &&
                 merged.model.heads == ck.model.heads && merged.model.seq == ck.model.seq &&
                 merged.model.vocab == ck.model.vocab, "the model shape (--layers/--hidden/--heads/--seq/--vocab)"),
        same(merged.dtype == ck.dtype && merged.mixed == ck.mixed && merged.grad_accum_dtype == ck.grad_accum_dtype &&
                 merged.master == ck.master, "the precision (--dtype/--mixed/--grad-accum-dtype/--master)"),
        same(merged.optimizer == ck.optimizer && (merged.optimizer != "sgd" || (merged.momentum > 0) == (ck.momentum > 0)),
             "--optimizer")})
    if (!e.empty()) return e;
  if (merged.steps <= resume_step)
    return "--steps " + std::to_string(merged.steps) + " is not beyond the checkpoint's step " +
           std::to_string(resume_step) + " (--steps counts the total)";
  // Keep saving next to the checkpoint resumed from (DIR, or the parent of a step directory),
  // wherever it was first written, unless --save is given now.
  std::filesystem::path root(cfg.resume);
  if (std::filesystem::exists(root / "meta.json")) root = root.parent_path();
  merged.resume = cfg.resume;
  merged.save = cfg.save.empty() ? root.string() : cfg.save;
  cfg = merged;
  return "";
}

template <class T>
int train_impl(const TrainConfig& cfg, int64_t resume_step, const TextData& data) {
  CommLedger comm_ledger, eval_ledger, checkpoint_ledger;
  Trace trace(cfg.trace == "on");
  ProcessGrid grid(GridSizes{cfg.dp, 1, 1, 1, 1}, cfg.ranks_per_node, &comm_ledger, &trace,
                   cfg.comm == "mpi" ? CommImpl::mpi : CommImpl::ring);
  const bool root = grid.world_rank() == 0;
  const int dp = grid.size(Axis::dp), dp_rank = grid.coord(Axis::dp);
  ParamLayout layout(cfg.model);
  MemoryLedger ledger;
  DataParallel<T> engine(cfg, layout, grid, ledger, trace);
  GPT<T> model(cfg.model, layout, cfg.micro_batch, ledger);
  if (resume_step > 0) engine.load_checkpoint(cfg.resume);

  std::unique_ptr<LossLog> log;
  if (!cfg.out.empty() && root) {
    std::filesystem::create_directories(cfg.out);
    std::ofstream(cfg.out + "/config.json") << cfg.to_json().dump(2) << "\n";
    log = std::make_unique<LossLog>(cfg.out + "/loss.csv", sizeof(T) == 8, static_cast<int>(resume_step));
  }
  const int B = cfg.micro_batch, Tn = cfg.model.seq;
  const int per_rank = cfg.global_batch / dp, accum = per_rank / B;
  const double tokens_per_step = double(cfg.global_batch) * Tn;
  const T loss_scale = T(1.0 / tokens_per_step);  // the one loss normalisation: mean over the GLOBAL batch
  std::vector<int32_t> inputs(B * Tn), targets(B * Tn);
  if (root) {
    std::printf("training %zu params on %s (%zu train / %zu validation bytes), %d steps of %d×%d tokens",
                layout.total(), data.path().c_str(), data.train_bytes(), data.val_bytes(), cfg.steps, cfg.global_batch, Tn);
    if (dp > 1) std::printf(", %s over %d data-parallel ranks (%d micro-batches of %d per rank per step)",
                            strategy_name(engine.strategy()), dp, accum, B);
    if (resume_step > 0) std::printf(", resuming after step %lld", static_cast<long long>(resume_step));
    std::printf("\n");
  }
  Progress progress(root ? cfg.progress : "none", static_cast<int>(resume_step), cfg.steps, tokens_per_step);
  double last_loss = NAN;
  std::optional<double> last_val;
  grid.world().barrier();
  trace.restart();

  for (int step = static_cast<int>(resume_step) + 1; step <= cfg.steps; ++step) {
    auto t0 = std::chrono::steady_clock::now();
    Trace::Span step_span(trace, "step " + std::to_string(step), "step", 2);
    engine.begin_step();
    double local_loss = 0.0;
    for (int k = 0; k < accum; ++k) {
      // This rank's samples of the global batch: [dp_rank·per_rank, (dp_rank+1)·per_rank), B at a time.
      const uint64_t first = static_cast<uint64_t>(dp_rank) * per_rank + static_cast<uint64_t>(k) * B;
      data.train_batch(cfg.seed, step, first, B, inputs.data(), targets.data());
      engine.begin_micro_batch(k == accum - 1);
      local_loss += model.forward(engine, inputs.data(), targets.data(), true, {cfg.seed, uint64_t(step), first});
      model.backward(engine, loss_scale);
    }
    engine.finish_gradients();
    const double loss = engine.sum_over_ranks(local_loss) / tokens_per_step;
    if (!std::isfinite(loss)) {
      progress.finish();
      if (root)
        std::fprintf(stderr, "shardlab train: error: the loss became %g at step %d; try a lower --lr (files written so far are kept)\n", loss, step);
      return 1;
    }
    const double gnorm = engine.grad_norm();
    const double grad_scale = (cfg.clip > 0 && gnorm > cfg.clip) ? cfg.clip / gnorm : 1.0;
    const double lr = learning_rate(step, cfg.steps, cfg.lr, cfg.warmup, cfg.lr_schedule == "cosine", cfg.min_lr_ratio);
    engine.optimizer_step(step, lr, grad_scale);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

    std::optional<double> val;
    if (cfg.eval_windows > 0 && ((cfg.eval_every > 0 && step % cfg.eval_every == 0) || step == cfg.steps))
    {
      engine.set_comm_ledger(&eval_ledger);  // evaluation's gathers (ZeRO-3) are not training's traffic
      val = evaluate_windows(model, static_cast<UnitAccess<T>&>(engine), data, cfg.eval_windows);
      engine.set_comm_ledger(&comm_ledger);
    }
    if (log) log->row(step, loss, gnorm, lr, ms, val);
    progress.step(step, loss, val);
    last_loss = loss;
    if (val) last_val = val;
    if (!cfg.save.empty() && ((cfg.save_every > 0 && step % cfg.save_every == 0) || step == cfg.steps)) {
      engine.set_comm_ledger(&checkpoint_ledger);  // gathering shards to save is not a step's traffic
      engine.save_checkpoint(cfg.save, step);
      engine.set_comm_ledger(&comm_ledger);
      if (root && cfg.progress != "none" && cfg.save_every > 0 && step != cfg.steps) {
        progress.finish();
        std::printf("saved %s/%s\n", cfg.save.c_str(), step_dir_name(step).c_str());
      }
    }
  }
  progress.finish();
  const ShardLayout& sh = engine.shards();
  RunLayout run{engine.strategy(), dp, sh.group, cfg.ranks_per_node, sh.padded(), sh.shard(), accum,
                cfg.steps - static_cast<int>(resume_step)};
  if (!cfg.out.empty()) {
    if (root) std::ofstream(cfg.out + "/loss.svg") << plot_runs({cfg.out}, "loss");
    write_ledger_file(cfg.out + "/ledger.json", cfg, layout.total(), run, ledger, comm_ledger, eval_ledger,
                      checkpoint_ledger, grid.world());
    if (trace.enabled()) write_trace_file(cfg.out + "/trace.json", trace, grid.world());
  }
  if (root) {
    print_summary(cfg, layout.total(), run, ledger, comm_ledger, progress, last_loss, last_val);
    if (!cfg.out.empty())
      std::printf("wrote %s/loss.csv, loss.svg and ledger.json%s\n", cfg.out.c_str(),
                  trace.enabled() ? (" and " + cfg.out + "/trace.json (open in ui.perfetto.dev)").c_str() : "");
    if (!cfg.save.empty()) std::printf("checkpoint %s/latest -> %s\n", cfg.save.c_str(), step_dir_name(cfg.steps).c_str());
  }
  return 0;
}

}  // namespace

int train_main(const std::vector<std::string>& args, const Runtime& rt) {
  for (const std::string& a : args)
    if (a == "--help" || a == "-h") {
      if (rt.is_root()) std::printf("%s", train_usage().c_str());
      return 0;
    }
  TrainConfig cfg;
  std::string err = parse_train_args(args, cfg);
  int64_t resume_step = 0;
  if (err.empty() && !cfg.resume.empty()) {
    try {
      err = apply_resume(args, cfg, resume_step);  // reads and verifies the checkpoint on every rank alike
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
  if (cfg.dtype == "f64") return train_impl<double>(cfg, resume_step, *data);
  return train_impl<float>(cfg, resume_step, *data);
}

}  // namespace shardlab
