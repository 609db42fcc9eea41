// The training loop (see trainer.h).
#include "train/trainer.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "comm/process_grid.h"
#include "core/blas_kernel.h"
#include "core/cpu_features.h"
#include "core/machine.h"
#include "io/data_identity.h"
#include "io/whole_checkpoint.h"
#include "model/model_chunk.h"
#include "optim/lr_schedule.h"
#include "parallel/context_parallel.h"
#include "parallel/data_parallel.h"
#include "parallel/exact_context_parallel.h"
#include "parallel/expert_parallel.h"
#include "parallel/pipeline.h"
#include "parallel/pipeline_partition.h"
#include "parallel/schedule.h"
#include "parallel/tensor_parallel.h"
#include "report/pipeline_report.h"
#include "train/divergence.h"
#include "train/evaluate.h"
#include "train/memory_check.h"
#include "train/run_outputs.h"

namespace shardlab {

namespace {

// Which positions of every sample each cp rank holds, as the ranks compute them (model/token_positions.h):
// "cp rank 0 [0, 16) + [48, 64), cp rank 1 [16, 32) + [32, 48) of every sample".
std::string context_tokens_text(int seq, int cp, ContextSplit split) {
  std::string t;
  for (int r = 0; r < cp; ++r) {
    const TokenPositions p = TokenPositions::of_rank(seq, cp, r, split);
    t += std::string(r ? ", " : "") + "cp rank " + std::to_string(r) + " ";
    for (int k = 0; k < p.runs; ++k)
      t += std::string(k ? " + " : "") + "[" + std::to_string(p.first[k]) + ", " + std::to_string(p.first[k] + p.run) +
           ")";
  }
  return t + " of every sample";
}

std::string run_header(const TrainConfig& cfg, const ParamLayout& layout, const TextData& data, int64_t resume_step,
                       const ProcessGrid& grid, Strategy strategy, int accum) {
  std::string h = "training " + params_text(cfg, layout.total()) + " on " + data.path() + " (" +
                  std::to_string(data.train_bytes()) + " train / " + std::to_string(data.val_bytes()) +
                  " validation bytes), " + std::to_string(cfg.run.steps) +
                  (cfg.run.steps == 1 ? " step of " : " steps of ") + std::to_string(cfg.global_batch) + "×" +
                  std::to_string(cfg.model.seq) + " tokens";
  if (resume_step > 0)
    h += ", resuming after step " + std::to_string(resume_step) +
         (cfg.layout.exact ? " in the exact mode (as an exact checkpoint resumes; --exact=false for the normal mode)"
                           : "");
  const ParallelLayout& l = cfg.layout;
  const int dp = grid.size(Axis::dp);
  std::string axes = dp > 1
                         ? std::string(strategy_name(strategy)) + " over " + std::to_string(dp) + " data-parallel ranks"
                     : grid.world_size() > 1 ? "one data-parallel rank"
                                             : "one process";
  if (l.tp > 1)
    axes +=
        ", tensor parallel over " + std::to_string(l.tp) + (l.sequence_parallel ? " with sequence parallelism" : "");
  if (l.cp > 1)
    axes += ", context parallel over " + std::to_string(l.cp) + " (" + word_of(kContextSplitWords, l.cp_split) +
            " split, ring attention)";
  if (l.ep > 1)
    axes += ", expert parallel over " + std::to_string(l.ep) + " (" + std::to_string(cfg.model.moe.experts / l.ep) +
            " experts per rank, each rank its own samples)";
  if (l.pp > 1)
    axes += ", " + std::to_string(l.pp) + " pipeline stages (" + schedule_name(l.schedule) +
            (l.virtual_stages > 1 ? ", " + std::to_string(l.virtual_stages) + " chunks each" : "") + ")";
  const int W = grid.world_size();
  h += "\nlayout: " + std::to_string(W) + (W > 1 ? " ranks, " : " rank, ") + axes + "; " + std::to_string(accum) +
       (accum > 1 ? " micro-batches of " : " micro-batch of ") + std::to_string(cfg.micro_batch) + " per rank per step";
  if (l.cp > 1) h += "\ntokens: " + context_tokens_text(cfg.model.seq, l.cp, l.cp_split);
  if (const MoeConfig& m = cfg.model.moe; m.on()) {
    const int slots = m.slots_per_sample(cfg.model.seq);
    char coefs[96];
    std::snprintf(coefs, sizeof coefs, "load-balancing loss α = %g, z-loss β = %g", m.aux_loss, m.z_loss);
    h += "\nexperts: " + std::to_string(m.experts) + " in " +
         (m.every == 1 ? std::string("every block") : "blocks l with l % " + std::to_string(m.every) + " = 0") +
         ", top-" + std::to_string(m.top_k) + ", width " + std::to_string(m.width(cfg.model.hidden)) + ", " +
         (slots ? "at most " + std::to_string(slots) + " slots per expert per sample" : std::string("dropless")) +
         "; " + coefs;
  }
  h += "\ncompute: " + build_arch() + " build; " + blas_kernel().describe();
  return h + "\nmemory: " + memory_need_text(cfg, grid.world_size()) + ", estimated";
}

const char* non_finite_word(double v) { return std::isnan(v) ? "NaN" : v > 0 ? "+Inf" : "-Inf"; }

template <class T>
int train_on(const TrainConfig& cfg, int64_t resume_step, const TextData& data, CheckpointHold& resume_hold) {
  const ParallelLayout& pl = cfg.layout;
  RunLedgers ledgers(cfg.outputs.trace);
  ProcessGrid grid(GridSizes{pl.dp, pl.tp, pl.pp, pl.cp, pl.ep}, pl.ranks_per_node, &ledgers.comm, &ledgers.trace,
                   pl.comm);
  // The ranks with other samples: dp × ep (tp, pp and cp partners hold the same samples).
  const int dp = grid.size(Axis::dp) * pl.ep, dp_rank = grid.coord(Axis::dp) * pl.ep + grid.coord(Axis::ep);
  const int stage = grid.coord(Axis::pp);
  const ModelSlice slice = cfg.slice(grid.coord(Axis::tp), grid.coord(Axis::cp), grid.coord(Axis::ep));
  const PipelinePartition part = partition_layers(cfg.model.layers, pl.pp, pl.virtual_stages, pl.pp_layers);
  // This rank's part of the model: its stage's units, its tp slice of each (all of it on one process).
  ParamLayout layout(cfg.model, slice, part.held_units(stage));
  DataParallel<T> engine(pl, cfg.recipe, cfg.optimizer, layout, grid, ledgers.memory, ledgers.trace);
  std::unique_ptr<TensorParallelRegions<T>> regions;  // the blocks' tp seams (identity when tp = 1)
  if (pl.tp > 1)
    regions = std::make_unique<TensorParallelRegions<T>>(grid.comm(Axis::tp), pl.sequence_parallel,
                                                         size_t(cfg.micro_batch) * slice.T_ctx(cfg.model.seq),
                                                         cfg.model.hidden, ledgers.memory);
  // The cp seams, wrapping the tp ones: ring attention around the cp ranks, or in the exact mode whole samples inside
  // the regions (exact_context_parallel.h).
  std::unique_ptr<ChunkHooks<T>> context;
  if (pl.cp > 1 && pl.exact)
    context = std::make_unique<ExactContextParallel<T>>(grid.comm(Axis::cp), regions.get(), slice, cfg.model.seq,
                                                        cfg.micro_batch, cfg.model.hidden, ledgers.memory);
  else if (pl.cp > 1)
    context = std::make_unique<ContextParallelAttention<T>>(grid.comm(Axis::cp), regions.get(), slice, cfg.model.seq,
                                                            cfg.micro_batch, cfg.model.heads / pl.tp,
                                                            cfg.model.head_dim(), ledgers.memory, &ledgers.trace);
  ChunkHooks<T>* hooks = context ? context.get() : regions.get();
  std::unique_ptr<ExpertParallel<T>> experts;  // the all-to-alls to the ep ranks' experts, wrapping the other seams
  if (pl.ep > 1) {
    experts = std::make_unique<ExpertParallel<T>>(grid.comm(Axis::ep), hooks, ledgers.memory, &ledgers.trace);
    hooks = experts.get();
  }
  std::vector<std::unique_ptr<ModelChunk<T>>> chunks;
  std::vector<ModelChunk<T>*> chunk_ptrs;
  for (int c = 0; c < part.virtual_stages; ++c) {
    // The v chunks of an interleaved stage never run at once: they share the first one's workspace.
    chunks.push_back(std::make_unique<ModelChunk<T>>(cfg.model, layout, part.chunk(stage, c), cfg.micro_batch,
                                                     cfg.activation_policy(), ledgers.memory, hooks, slice,
                                                     c ? chunks[0]->workspace() : nullptr));
    chunk_ptrs.push_back(chunks.back().get());
  }
  PipelineStage<T> pipeline(part, stage, chunk_ptrs, pl.pp > 1 ? &grid.comm(Axis::pp) : nullptr, ledgers.memory);
  if (cfg.outputs.resume.empty())
    engine.states().init_weights(cfg.model, cfg.run.seed);
  else
    load_whole_checkpoint(engine, cfg.outputs.resume);  // also a checkpoint of step 0
  resume_hold.release();                                // loaded: a later save of this run (--keep-last) may prune it

  const int B = cfg.micro_batch, Tn = cfg.model.seq;
  const int per_rank = cfg.global_batch / dp, accum = per_rank / B;
  const double tokens_per_step = double(cfg.global_batch) * Tn;
  const T loss_scale = T(1.0 / tokens_per_step);  // the one loss normalisation: mean over the GLOBAL batch
  const std::vector<StageActions> schedule = make_schedule(pl.schedule, pl.pp, accum, pl.virtual_stages);

  const RunRecord record{cfg.to_json(), cfg.run_id, identify_data(cfg.run.data), cfg.run.seed};  // for meta.json
  const int first_step = static_cast<int>(resume_step) + 1;
  RunOutputs outputs(cfg, resume_step, tokens_per_step, grid.world(), ledgers, [&](int64_t step) {
    engine.set_comm_ledger(&ledgers.comm_checkpoint);  // gathering shards to save is not a step's traffic
    try {
      save_whole_checkpoint(engine, cfg.model, pl, record, cfg.outputs.save, step);
    } catch (const DivergedStates& e) {  // this step's update made them so: name what sizes an update
      throw std::runtime_error(e.what() +
                               divergence_suspects(cfg, Diverged::weights, static_cast<int>(step), first_step));
    }
    engine.set_comm_ledger(&ledgers.comm);
  });
  outputs.begin(run_header(cfg, layout, data, resume_step, grid, engine.strategy(), accum));
  grid.world().barrier();
  ledgers.trace.restart();

  std::vector<MeasuredSlot> last_slots;
  MoeStepLoad moe_run;  // the routing summed over the run's steps (ledger.json)
  int moe_steps = 0;
  for (int step = first_step; step <= cfg.run.steps; ++step) {
    const auto t0 = std::chrono::steady_clock::now();
    Trace::Span step_span(ledgers.trace, "step " + std::to_string(step), "step", 2);
    engine.begin_step();
    // Micro-batch k of this rank: samples [dp_rank·per_rank + k·B, … + B) of the global batch.
    MicroBatchSource micro_batches;
    micro_batches.samples = [&](int) { return B; };
    micro_batches.draw = [&](int k, std::vector<int32_t>& inputs, std::vector<int32_t>& targets) {
      const uint64_t first = static_cast<uint64_t>(dp_rank) * per_rank + static_cast<uint64_t>(k) * B;
      inputs.resize(size_t(B) * Tn);
      targets.resize(inputs.size());
      data.train_batch(cfg.run.seed, step, first, B, inputs.data(), targets.data());
      return MicroBatch{k, B, inputs.data(), targets.data(), {cfg.run.seed, uint64_t(step), first}};
    };
    const double local_loss = pipeline.run(schedule[stage], engine, accum, loss_scale, micro_batches, true,
                                           [&](bool last) { engine.begin_backward(last); });
    if (step == cfg.run.steps) last_slots = pipeline.measured();  // the last step's timeline (for the picture)
    std::optional<MoeStepLoad> moe;  // what the experts were routed, over every rank's samples
    if (cfg.model.moe.on()) {
      MoeStats mine;  // this rank's chunks' blocks
      for (ModelChunk<T>* c : chunk_ptrs) mine.add(c->take_moe_stats());
      moe = step_moe_load(cfg.model, mine, engine.sums(), cfg.global_batch, pl.exact);
      add_step_load(moe_run, *moe);
      ++moe_steps;
    }
    engine.finish_gradients();
    const double loss =
        (pl.exact ? engine.sums().exact_over_ranks(pipeline.take_loss_terms()) : engine.sums().over_ranks(local_loss)) /
        tokens_per_step;
    if (!std::isfinite(loss)) {  // the weights the last update made (or the run started from) give it
      outputs.abandon();
      const bool started = step == first_step;
      const std::string why = started ? ", before any update of this run"
                                      : ": the update of step " + std::to_string(step - 1) +
                                            " made the weights too large or non-finite (its gradients were finite)";
      if (grid.world_rank() == 0)
        std::fprintf(stderr,
                     "shardlab train: error: the loss became %s at step %d%s%s (files written so far are kept)\n",
                     non_finite_word(loss), step, why.c_str(),
                     divergence_suspects(cfg, started ? Diverged::start : Diverged::weights, step, first_step).c_str());
      return 1;
    }
    const double gnorm = engine.grad_norm();  // the same on every rank: they all stop here together
    if (!std::isfinite(gnorm)) {              // caught before the update it would spoil
      outputs.abandon();
      if (grid.world_rank() == 0)
        std::fprintf(stderr,
                     "shardlab train: error: the gradients became %s in step %d, whose loss (%.6g) was finite; the "
                     "step is not applied%s (files written so far are kept)\n",
                     non_finite_word(gnorm), step, loss,
                     divergence_suspects(cfg, Diverged::gradients, step, first_step).c_str());
      return 1;
    }
    const OptimizerSettings& o = cfg.optimizer;
    const double grad_scale = (o.clip > 0 && gnorm > o.clip) ? o.clip / gnorm : 1.0;
    const double lr =
        learning_rate(step, cfg.run.steps, o.lr, o.warmup, o.schedule == LrSchedule::cosine, o.min_lr_ratio);
    engine.optimizer_step(step, lr, grad_scale);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

    std::optional<double> val;
    if (cfg.run.eval_windows > 0 &&
        ((cfg.run.eval_every > 0 && step % cfg.run.eval_every == 0) || step == cfg.run.steps)) {
      engine.set_comm_ledger(&ledgers.comm_eval);  // evaluation's gathers (ZeRO-3) are not training's traffic
      ledgers.memory.pause_items(true);            // nor are its activations training's items
      if (experts) experts->count_moves(false);    // nor its exchanges
      val = evaluate_pipeline(pipeline, engine, part, cfg.micro_batch, data, cfg.run.eval_windows);
      ledgers.memory.pause_items(false);
      if (experts) experts->count_moves(true);
      engine.set_comm_ledger(&ledgers.comm);
    }
    outputs.step_done({step, loss, gnorm, lr, ms, val, moe});
  }
  RunLayout done{engine.strategy(),
                 grid.size(Axis::dp),
                 pl.ranks_per_node,
                 engine.shards(),
                 accum,
                 cfg.run.steps - static_cast<int>(resume_step),
                 nullptr,
                 nullptr,
                 nullptr,
                 nullptr};
  if (cfg.model.moe.on()) {
    done.moe = moe_run_json(cfg.model, pl.ep, moe_run, moe_steps);
    done.moe_rank = {{"expert_params", expert_params(layout)}, {"forwards", nlohmann::json::array()}};
    for (ModelChunk<T>* c : chunk_ptrs)
      done.moe_rank["forwards"].push_back(moe_rows_json(cfg.model, c->spec(), c->moe_rows()));
    if (experts) {
      const auto& m = experts->moved();
      done.moe_rank["ep_rank"] = grid.coord(Axis::ep);
      done.moe_rank["dispatch_rows_sent"] = m.dispatch_sent;
      done.moe_rank["dispatch_rows_received"] = m.dispatch_received;
      done.moe_rank["combine_rows_sent"] = m.combine_sent;
      done.moe_rank["combine_rows_received"] = m.combine_received;
      done.moe_rank["count_exchanges"] = m.counts;
      done.moe_rank["dispatches"] = m.dispatches;
      done.moe_rank["combines"] = m.combines;
    }
  }
  if (pl.pp > 1) {  // the last step, measured, beside the schedule (one rank speaks for each stage)
    const int local = launcher_local_ranks();  // the ranks sharing this machine's CPUs (all of them without mpirun)
    done.pipeline = pipeline_run_json(pl.schedule, pl.pp, accum, pl.virtual_stages, cfg.run.steps,
                                      local > 0 ? local : grid.world_size(), online_cpus());
    done.pipeline_rank = pipeline_rank_json(
        stage, grid.coord(Axis::dp) == 0 && grid.coord(Axis::cp) == 0 && grid.coord(Axis::tp) == 0, last_slots);
  }
  outputs.finish(done, layout.total());
  return 0;
}

}  // namespace

int train(const TrainConfig& cfg, int64_t resume_step, const TextData& data, CheckpointHold& resume_hold) {
  if (cfg.recipe.f64()) return train_on<double>(cfg, resume_step, data, resume_hold);
  return train_on<float>(cfg, resume_step, data, resume_hold);
}

}  // namespace shardlab
