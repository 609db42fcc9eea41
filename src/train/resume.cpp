// Resolving --resume (see resume.h).
#include "train/resume.h"

#include "core/paths.h"
#include "io/checkpoint.h"
#include "io/data_identity.h"
#include "io/train_checkpoint.h"
#include "train/run_dirs.h"

#include <nlohmann/json.hpp>

namespace shardlab {

TrainConfig checkpoint_config(const std::string& dir_or_step, int64_t* step, DataIdentity* data) {
  const nlohmann::json j = checkpoint_config_json(dir_or_step, step, data);
  TrainConfig cfg;
  try {
    cfg = TrainConfig::from_json(j);
  } catch (const std::exception& e) {
    throw std::runtime_error("checkpoint " + resolve_step_dir(dir_or_step) + ": meta.json's config is " + e.what());
  }
  // The model's shape is checked, not trusted: eval and sample size every buffer from it (heads 0 or seq 0
  // would divide by zero, hidden 0 would evaluate nothing).
  if (const std::string why = cfg.model.validate(); !why.empty())
    throw std::runtime_error("checkpoint " + resolve_step_dir(dir_or_step) +
                             ": meta.json's config is not a model shardlab can build (" + why + ")");
  return cfg;
}

std::string resolve_resume(const std::vector<std::string>& args, TrainConfig& cfg, int64_t& resume_step,
                           std::string& warning, CheckpointHold& hold) {
  // One step for every read below and the trainer's load: a live run's --keep-last cannot prune it meanwhile,
  // and the configuration, the checks and the tensors are all of the step resumed from.
  hold = CheckpointHold(cfg.outputs.resume);
  const std::string step_dir = hold.step_dir();
  DataIdentity was;  // the data the checkpoint trained on
  TrainConfig ck = checkpoint_config(step_dir, &resume_step, &was);
  TrainConfig merged = ck;
  // Checkpoints hold whole tensors: the layout is the new run's to choose. And a run writes only where its
  // own command line says: nothing of the outputs carries over.
  // Except the exact mode: it is the curve's numerics, not the layout — a resumed exact run stays exact (so that its
  // curve goes on bit for bit), unless the command line says --exact=false.
  merged.layout = ParallelLayout();
  merged.layout.exact = ck.layout.exact;
  merged.outputs = OutputSettings();
  std::string err = parse_train_args(args, merged);
  if (!err.empty()) return err;
  auto same = [&](bool eq, const char* flag) {
    return eq ? std::string()
              : std::string("--resume: ") + flag +
                    " differs from the checkpoint's; a resumed run keeps the model states it saved";
  };
  const GPTConfig &m = merged.model, &c = ck.model;
  const Recipe &r = merged.recipe, &k = ck.recipe;
  for (const std::string& e :
       {same(m.layers == c.layers && m.hidden == c.hidden && m.heads == c.heads && m.seq == c.seq && m.vocab == c.vocab,
             "the model shape (--layers/--hidden/--heads/--seq/--vocab)"),
        same(m.moe.experts == c.moe.experts &&
                 (!m.moe.on() || (m.moe.every == c.moe.every && m.moe.width(m.hidden) == c.moe.width(c.hidden))),
             "the experts (--moe-experts/--moe-every/--moe-ffn)"),
        same(r.dtype == k.dtype && r.mixed == k.mixed && r.grad_accum == k.grad_accum && r.master == k.master,
             "the precision (--dtype/--mixed/--grad-accum-dtype/--master)"),
        same(r.optimizer == k.optimizer && r.keeps(Mem::momentum) == k.keeps(Mem::momentum), "--optimizer")})
    if (!e.empty()) return e;
  if (merged.run.steps <= resume_step)
    return "--steps " + std::to_string(merged.run.steps) + " is not beyond the checkpoint's step " +
           std::to_string(resume_step) + " (--steps counts the total)";
  // The data: the checkpoint's own bytes, or another file named with --data on purpose (said, not refused).
  if (!was.sha256.empty()) {
    if (const std::string why = input_file_problem(merged.run.data); !why.empty())
      throw std::runtime_error("--data: " + why + " (the checkpoint trained on " + was.describe() + ")");
    const DataIdentity now = identify_data(merged.run.data);
    if (now.sha256 != was.sha256 || now.bytes != was.bytes) {
      if (merged.run.data == ck.run.data)
        return "--resume: the data file " + now.describe() + " is not the one the checkpoint trained on, " +
               was.describe() +
               "; give that file with --data, or name other data with --data to train on it on purpose";
      warning = "training on " + now.describe() + ", not on the checkpoint's data " + was.describe();
    }
  }
  // Every tensor the run will load, checked now — on every rank alike, before any rank talks to another —
  // so a bad checkpoint is one message, not an abort in the middle of a collective.
  check_train_checkpoint(step_dir, merged.recipe, ParamLayout(merged.model));
  // The exact step directory: the run's config.toml then names what it really resumed from.
  merged.outputs.resume = step_dir;
  // The run continues (its own directories are its to continue); a checkpoint from before run ids gets a new one.
  const std::string id = checkpoint_run_id(step_dir);
  merged.run_id = id.empty() ? cfg.run_id : id;
  cfg = merged;
  return "";
}

}  // namespace shardlab
