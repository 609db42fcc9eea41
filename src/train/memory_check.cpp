// The memory check before a run allocates anything (see memory_check.h).
#include "train/memory_check.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "optim/strategy.h"
#include "parallel/pipeline_partition.h"
#include "parallel/schedule.h"
#include "report/format.h"

namespace shardlab {

namespace {
// Ranks of this job on this machine (the launcher's count), 1 without one.
int local_ranks(int world) {
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"})
    if (const char* e = std::getenv(var)) return std::max(1, std::atoi(e));
  return world;
}
}  // namespace

plan::MemoryNeed memory_need(const TrainConfig& cfg, int world) {
  plan::RunShape run;
  run.gpt = {uint64_t(cfg.model.vocab), uint64_t(cfg.model.seq), uint64_t(cfg.model.hidden),
             uint64_t(cfg.model.layers)};
  const MoeConfig& moe = cfg.model.moe;
  if (moe.on())
    run.gpt.moe = {uint64_t(moe.experts), uint64_t(moe.top_k), uint64_t(moe.every),
                   uint64_t(moe.width(cfg.model.hidden))};
  run.ep = static_cast<uint64_t>(std::max(1, cfg.layout.ep));
  run.heads = cfg.model.heads;
  run.micro_batch = cfg.micro_batch;
  run.recipe = cfg.recipe;
  const ParallelLayout& l = cfg.layout;
  run.layout.strategy = l.strategy();
  const int cp = std::max(1, l.cp), dp = (l.dp ? l.dp : world / std::max(1, l.tp * l.pp * cp * l.ep)) * l.ep;
  // The model states are sharded over the gradient group, dp × cp (× ep); ZeRO/FSDP with experts over the ranks that
  // hold the same parameters, dp × cp (parallel/across_ep.cpp).
  run.layout.dp = (run.layout.strategy == Strategy::dp ? dp : dp / l.ep) * cp;
  run.tp = static_cast<uint64_t>(std::max(1, l.tp));
  run.sequence_parallel = l.sequence_parallel;
  run.cp = static_cast<uint64_t>(cp);
  if (l.pp > 1 && pipeline_problem(cfg.model.layers, l.pp, l.virtual_stages, l.schedule, l.pp_layers).empty()) {
    const PipelinePartition part = partition_layers(cfg.model.layers, l.pp, l.virtual_stages, l.pp_layers);
    const int m = cfg.global_batch / std::max(1, dp * cfg.micro_batch);
    const Timeline t =
        simulate(make_schedule(l.schedule, l.pp, std::max(m, 1), l.virtual_stages), l.virtual_stages, 1, 2);
    run.pp = static_cast<uint64_t>(l.pp);
    for (int s = 0; s < l.pp; ++s) run.stage_blocks = std::max<uint64_t>(run.stage_blocks, part.blocks_of(s));
    for (int x : t.stash)
      run.stash = std::max<uint64_t>(run.stash, (x + part.virtual_stages - 1) / part.virtual_stages);
  }
  run.layout.ranks_per_node = l.ranks_per_node / std::max(1, l.tp * l.pp);  // gradient-group ranks per node
  run.attention = cfg.attention;
  run.recompute = cfg.recompute;
  return plan::rank_memory_need(run);
}

double available_memory_bytes() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  double kb = 0;
  std::string unit;
  while (f >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return 0;
}

std::string memory_need_text(const TrainConfig& cfg, int world) {
  const plan::MemoryNeed m = memory_need(cfg, world);
  return "~" + format_bytes(double(m.total())) + " per rank (model states " + format_bytes(double(m.model_states)) +
         ", activations " + format_bytes(double(m.activations)) + ", workspace " + format_bytes(double(m.workspace)) +
         ")";
}

std::string check_memory(const TrainConfig& cfg, int world, double data_bytes, bool whole_model) {
  const double available = available_memory_bytes();
  if (cfg.outputs.force_memory || available <= 0) return "";
  const plan::MemoryNeed m = memory_need(cfg, world);
  const int here = local_ranks(world);
  const double per_rank = double(m.total()) + data_bytes, all = per_rank * here;
  if (all <= available) return "";
  std::ostringstream o;
  o << "this run needs " << format_bytes(per_rank) << " per rank (model states " << format_bytes(double(m.model_states))
    << ", activations " << format_bytes(double(m.activations)) << ", workspace " << format_bytes(double(m.workspace))
    << ")";
  if (here > 1) o << " × " << here << " ranks on this machine = " << format_bytes(all);
  o << ", but " << format_bytes(available) << " is available; "
    << (whole_model ? "this process holds the whole model: it needs a machine with more memory"
        : m.activations >= m.model_states
            ? "lower --micro-batch or --seq"
            : "lower --hidden or --layers, or shard the model states (--zero 3 or --tp over "
              "more ranks)")
    << ", or give --force-memory to start anyway";
  return o.str();
}

std::string check_inference_memory(const TrainConfig& checkpoint, int batch, double data_bytes, bool force_memory) {
  TrainConfig need = checkpoint;  // what eval and sample allocate: the weights and one batch's activations
  need.micro_batch = batch;
  need.global_batch = batch;
  need.recipe.optimizer = Optimizer::sgd;
  need.recipe.momentum = 0;
  need.layout = ParallelLayout();  // whatever layout trained it, one process holds it whole
  need.layout.dp = 1;
  need.outputs.force_memory = force_memory;
  return check_memory(need, 1, data_bytes, true);
}

}  // namespace shardlab
