// Resolving --resume (see resume.h).
#include "train/resume.h"

#include "core/paths.h"
#include "io/checkpoint.h"
#include "io/data_identity.h"
#include "io/train_checkpoint.h"
#include "train/run_dirs.h"

namespace shardlab {

std::string resolve_resume(const std::vector<std::string>& args, TrainConfig& cfg, int64_t& resume_step,
                           std::string& warning) {
  DataIdentity was;  // the data the checkpoint trained on
  TrainConfig ck = checkpoint_config(cfg.resume, &resume_step, &was);
  TrainConfig merged = ck;
  const TrainConfig fresh;  // checkpoints hold whole tensors: the layout is the new run's to choose
  merged.dp = fresh.dp;
  merged.tp = fresh.tp;
  merged.sequence_parallel = fresh.sequence_parallel;
  merged.pp = fresh.pp;
  merged.pp_layers = fresh.pp_layers;
  merged.schedule = fresh.schedule;
  merged.virtual_stages = fresh.virtual_stages;
  merged.zero = fresh.zero;
  merged.fsdp = fresh.fsdp;
  merged.ranks_per_node = fresh.ranks_per_node;
  // A run writes only where its own command line says: nothing of the outputs carries over.
  merged.out = fresh.out;
  merged.save = fresh.save;
  merged.save_every = fresh.save_every;
  merged.keep_last = fresh.keep_last;
  merged.overwrite = fresh.overwrite;
  merged.trace = fresh.trace;
  merged.force_memory = fresh.force_memory;
  std::string err = parse_train_args(args, merged);
  if (!err.empty()) return err;
  auto same = [&](bool eq, const char* flag) {
    return eq ? std::string()
              : std::string("--resume: ") + flag +
                    " differs from the checkpoint's; a resumed run keeps the model states it saved";
  };
  const GPTConfig &m = merged.model, &c = ck.model;
  for (const std::string& e :
       {same(m.layers == c.layers && m.hidden == c.hidden && m.heads == c.heads && m.seq == c.seq && m.vocab == c.vocab,
             "the model shape (--layers/--hidden/--heads/--seq/--vocab)"),
        same(merged.dtype == ck.dtype && merged.mixed == ck.mixed && merged.grad_accum_dtype == ck.grad_accum_dtype &&
                 merged.master == ck.master,
             "the precision (--dtype/--mixed/--grad-accum-dtype/--master)"),
        same(merged.optimizer == ck.optimizer &&
                 (merged.optimizer != "sgd" || (merged.momentum > 0) == (ck.momentum > 0)),
             "--optimizer")})
    if (!e.empty()) return e;
  if (merged.steps <= resume_step)
    return "--steps " + std::to_string(merged.steps) + " is not beyond the checkpoint's step " +
           std::to_string(resume_step) + " (--steps counts the total)";
  // The data: the checkpoint's own bytes, or another file named with --data on purpose (said, not refused).
  if (!was.sha256.empty()) {
    if (const std::string why = input_file_problem(merged.data); !why.empty())
      throw std::runtime_error("--data: " + why + " (the checkpoint trained on " + was.describe() + ")");
    const DataIdentity now = identify_data(merged.data);
    if (now.sha256 != was.sha256 || now.bytes != was.bytes) {
      if (merged.data == ck.data)
        return "--resume: the data file " + now.describe() + " is not the one the checkpoint trained on, " +
               was.describe() +
               "; give that file with --data, or name other data with --data to train on it on purpose";
      warning = "training on " + now.describe() + ", not on the checkpoint's data " + was.describe();
    }
  }
  // Every tensor the run will load, checked now — on every rank alike, before any rank talks to another —
  // so a bad checkpoint is one message, not an abort in the middle of a collective.
  check_train_checkpoint(cfg.resume, merged, ParamLayout(merged.model));
  // The exact step directory: the run's config.toml then names what it really resumed from.
  merged.resume = resolve_step_dir(cfg.resume);
  // The run continues (its own directories are its to continue); a checkpoint from before run ids gets a new one.
  const std::string id = checkpoint_run_id(cfg.resume);
  merged.run_id = id.empty() ? cfg.run_id : id;
  cfg = merged;
  return "";
}

}  // namespace shardlab
