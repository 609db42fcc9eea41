// The parallel layout of a run, as typed settings: how many ranks on each axis of the grid (dp, tp, pp, cp, ep),
// how the data-parallel ranks share the model states (the
// strategy: --zero N or --fsdp NAME), how a pipeline is scheduled, and how ranks talk (buckets, overlap,
// prefetch, hand-written rings or MPI's built-ins). Read by the engine, the pipeline, the memory check and
// the reports; written from the command line, config files and checkpoints by train/train_config.cpp.
// Checkpoints hold whole tensors, so a resumed run chooses its layout afresh.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "model/config.h"
#include "optim/strategy.h"
#include "parallel/schedule.h"

namespace shardlab {

struct ParallelLayout {
  int dp = 0;                      // data-parallel ranks; 0 = what the other axes leave of the world
  int tp = 1;                      // tensor-parallel ranks (Megatron: heads and MLP width split over them)
  bool sequence_parallel = false;  // with tp > 1: LayerNorm, dropout and residual regions split along the sequence
  int cp = 1;                      // context-parallel ranks (every sample's tokens split over them, C24)
  ContextSplit cp_split = ContextSplit::zigzag;  // which tokens each cp rank holds (model/token_positions.h)
  int ep = 1;  // expert-parallel ranks: each holds E/ep of every MoE block's experts and its own samples (C25)
  int pp = 1;  // pipeline stages
  std::vector<int> pp_layers;  // layers per stage ({} = balanced; --pp-layers 3,5; parallel/pipeline_partition.h)
  ScheduleKind schedule = ScheduleKind::one_f_one_b;
  int virtual_stages = 1;          // model chunks per stage (interleaved)
  int zero = 0;                    // ZeRO stage 0..3 (--zero)
  std::optional<Strategy> fsdp;    // --fsdp NAME instead of --zero (validation refuses both)
  double bucket_mb = 1.0;          // gradient bucket size for DP's overlapped all-reduce
  bool overlap = true;             // sync gradients during backward
  bool prefetch = true;            // ZeRO-3 gathers the next unit while this one computes
  CommImpl comm = CommImpl::ring;  // hand-written rings or MPI's built-ins
  int ranks_per_node = 0;          // simulate nodes of K ranks; 0 = real shared-memory nodes
  bool exact = false;              // --exact: products per sample, every sum across samples and ranks order-free

  Strategy strategy() const { return fsdp ? *fsdp : zero >= 1 && zero <= 3 ? strategy_at(zero) : Strategy::dp; }
  ModelSlice slice(int tp_rank, int cp_rank = 0, int ep_rank = 0) const {
    return ModelSlice{tp, tp_rank, sequence_parallel, cp, cp_rank, cp_split, ep, ep_rank};
  }
  int dp_size(int world) const { return dp ? dp : world / (tp * pp * cp * ep); }
  // The ranks that hold different samples: dp × ep (expert parallelism is carved out of data parallelism).
  int data_ranks(int world) const { return dp_size(world) * ep; }
};

}  // namespace shardlab
