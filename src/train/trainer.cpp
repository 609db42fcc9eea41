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

namespace shardlab {

namespace {

nlohmann::json ledger_file_json(const TrainConfig& cfg, size_t params, const MemoryLedger& ledger) {
  nlohmann::json j;
  j["world_size"] = 1;
  j["model"] = {{"params", params},
                {"dtype", cfg.dtype},
                {"mixed", cfg.mixed},
                {"optimizer", cfg.optimizer},
                {"grad_accum_dtype", cfg.grad_accum_dtype},
                {"master", cfg.master},
                {"momentum", cfg.momentum}};
  j["ranks"] = nlohmann::json::array({{{"rank", 0}, {"memory", ledger.to_json()}, {"comm", nlohmann::json::array()}}});
  return j;
}

void print_summary(const TrainConfig& cfg, size_t params, const MemoryLedger& ledger, const Progress& progress,
                   double last_loss, std::optional<double> last_val) {
  std::printf("\n%s params (%d layers, hidden %d, %d heads, seq %d), %s, %s\n", std::to_string(params).c_str(),
              cfg.model.layers, cfg.model.hidden, cfg.model.heads, cfg.model.seq, cfg.dtype.c_str(),
              cfg.mixed == "bf16" ? "mixed bf16" : "no mixed precision");
  std::printf("final loss %.4f", last_loss);
  if (last_val) std::printf("   val loss %.4f", *last_val);
  std::printf("   %.0f tokens/s over %s\n", progress.tokens_per_second(),
              format_duration(progress.elapsed_seconds()).c_str());
  std::printf("memory (rank 0)      current        peak   bytes/param\n");
  for (int i = 0; i < kMemCategories; ++i) {
    Mem c = static_cast<Mem>(i);
    if (ledger.peak(c) == 0) continue;
    std::printf("  %-12s %12s %12s", mem_name(c), format_bytes(ledger.current(c)).c_str(),
                format_bytes(ledger.peak(c)).c_str());
    if (i <= static_cast<int>(Mem::momentum)) std::printf("   %6.2f", double(ledger.current(c)) / params);
    std::printf("\n");
  }
  std::printf("  %-12s %12s %12s   %6.2f\n", "model states", format_bytes(ledger.model_state_bytes()).c_str(), "",
              double(ledger.model_state_bytes()) / params);
}

// Resuming starts from the checkpoint's config; flags given now override it, except the ones that
// define the model states, which must match.
std::string apply_resume(const std::vector<std::string>& args, TrainConfig& cfg, int64_t& resume_step) {
  TrainConfig ck = checkpoint_config(cfg.resume, &resume_step);
  TrainConfig merged = ck;
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
int train_impl(const TrainConfig& cfg, int64_t resume_step) {
  TextData data(cfg.data, cfg.model.seq, cfg.model.vocab);
  ParamLayout layout(cfg.model);
  MemoryLedger ledger;
  ModelStates<T> states(cfg, layout, ledger);
  GPT<T> model(cfg.model, layout, cfg.micro_batch, ledger);
  if (resume_step > 0) load_train_checkpoint(cfg.resume, layout, states, true);

  std::unique_ptr<LossLog> log;
  if (!cfg.out.empty()) {
    std::filesystem::create_directories(cfg.out);
    std::ofstream(cfg.out + "/config.json") << cfg.to_json().dump(2) << "\n";
    log = std::make_unique<LossLog>(cfg.out + "/loss.csv", sizeof(T) == 8, static_cast<int>(resume_step));
  }
  const int B = cfg.micro_batch, Tn = cfg.model.seq;
  const double tokens_per_step = double(cfg.global_batch) * Tn;
  const T loss_scale = T(1.0 / tokens_per_step);
  std::vector<int32_t> inputs(B * Tn), targets(B * Tn);
  std::printf("training %zu params on %s (%zu train / %zu validation bytes), %d steps of %d×%d tokens%s\n",
              layout.total(), data.path().c_str(), data.train_bytes(), data.val_bytes(), cfg.steps, cfg.global_batch,
              Tn, resume_step > 0 ? (", resuming after step " + std::to_string(resume_step)).c_str() : "");
  Progress progress(cfg.progress, static_cast<int>(resume_step), cfg.steps, tokens_per_step);
  double last_loss = NAN;
  std::optional<double> last_val;

  for (int step = static_cast<int>(resume_step) + 1; step <= cfg.steps; ++step) {
    auto t0 = std::chrono::steady_clock::now();
    states.zero_grads();
    double loss_sum = 0.0;
    for (int k = 0; k < cfg.accumulation_steps(); ++k) {
      const uint64_t first = static_cast<uint64_t>(k) * B;
      data.train_batch(cfg.seed, step, first, B, inputs.data(), targets.data());
      loss_sum += model.forward(states.compute_params(), inputs.data(), targets.data(), true, {cfg.seed, uint64_t(step), first});
      model.backward(states.backward_grads(), states.compute_params(), loss_scale);
      states.end_micro_batch();
    }
    const double loss = loss_sum / tokens_per_step;
    if (!std::isfinite(loss)) {
      progress.finish();
      std::fprintf(stderr, "shardlab: error: the loss became %g at step %d; try a lower --lr (files written so far are kept)\n", loss, step);
      return 1;
    }
    const double gnorm = states.grad_norm();
    const double grad_scale = (cfg.clip > 0 && gnorm > cfg.clip) ? cfg.clip / gnorm : 1.0;
    const double lr = learning_rate(step, cfg.steps, cfg.lr, cfg.warmup, cfg.lr_schedule == "cosine", cfg.min_lr_ratio);
    states.optimizer_step(step, lr, grad_scale);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

    std::optional<double> val;
    if (cfg.eval_windows > 0 && ((cfg.eval_every > 0 && step % cfg.eval_every == 0) || step == cfg.steps))
      val = evaluate_windows(model, states.compute_params(), data, cfg.eval_windows);
    if (log) log->row(step, loss, gnorm, lr, ms, val);
    progress.step(step, loss, val);
    last_loss = loss;
    if (val) last_val = val;
    if (!cfg.save.empty() && ((cfg.save_every > 0 && step % cfg.save_every == 0) || step == cfg.steps)) {
      std::string where = save_train_checkpoint(cfg.save, step, cfg, layout, states);
      if (cfg.progress != "none" && cfg.save_every > 0 && step != cfg.steps) {
        progress.finish();
        std::printf("saved %s\n", where.c_str());
      }
    }
  }
  progress.finish();
  if (!cfg.out.empty()) {
    std::ofstream(cfg.out + "/ledger.json") << ledger_file_json(cfg, layout.total(), ledger).dump(2) << "\n";
  }
  print_summary(cfg, layout.total(), ledger, progress, last_loss, last_val);
  if (!cfg.out.empty()) std::printf("wrote %s/loss.csv and %s/ledger.json\n", cfg.out.c_str(), cfg.out.c_str());
  if (!cfg.save.empty()) std::printf("checkpoint %s/latest -> step_%06d\n", cfg.save.c_str(), cfg.steps);
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
  if (err.empty() && !cfg.resume.empty()) err = apply_resume(args, cfg, resume_step);
  if (err.empty()) err = validate_train_config(cfg);
  if (err.empty() && rt.size() > 1)
    err = "this build trains on one rank; run without mpirun (parallel layouts come with --dp/--tp/--pp)";
  if (!err.empty()) {
    if (rt.is_root()) std::fprintf(stderr, "shardlab train: error: %s\n", err.c_str());
    return 2;
  }
  if (cfg.dtype == "f64") return train_impl<double>(cfg, resume_step);
  return train_impl<float>(cfg, resume_step);
}

}  // namespace shardlab
