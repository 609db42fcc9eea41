// plan/step_time.h — how long one optimizer step of a layout takes (claim C29: parallelism moves cost between
// memory, communication, bubble and compute), each term apart: step = compute + optimizer update + exposed dp, tp,
// pp, cp, ep communication + pipeline bubble. The rates are a struct (StepRates) so that a calibration can fill them.
//
//   compute   FLOPs per GPU ÷ rate. Per token 6·N + 12·L·s·h (plan/state_bytes.h's gpt_flops_per_token; N = Ψ for a
//             preset; with experts N counts a MoE block's router E·h and the k experts a token visits, k·2·h·F),
//             plus recompute's extra forward: full recompute the whole forward again, 2·N + 4·L·s·h (C27);
//             selective recompute or the flash kernel (its backward recomputes the scores) the attention core's
//             forward, 4·L·s·h, once (C28). A GPU does 1/(dp·ep·tp·cp) of the tokens' work for its stage's
//             layers (the largest stage's share, blocks/L) — 1/(dp·ep·cp) of the router's and experts', which run
//             whole on every tp rank. Forward is a third of the rest, backward two thirds.
//   messages  α + bytes/β per collective call or point-to-point message, bytes = what one member sends: a ring
//             all-reduce of n members 2(n−1)/n of the buffer, a reduce-scatter or all-gather (n−1)/n
//             (plan/comm_volume.h's ring rule, C8). β is the intra-node link when the group lies inside one node,
//             else the inter-node one (a ring goes at its slowest link).
//   placement tp innermost, then cp, ep, dp, pp outermost (K GPUs per node): the tp group spans tp GPUs, cp's tp·cp,
//             ep's tp·cp·ep, the gradient group's (dp·cp) tp·cp·ep·dp; pipeline neighbours are N/pp apart, inside a
//             node only when all N GPUs are. (The trainer's grid orders dp outermost, pp inside it; the chapter
//             puts pp across nodes, C26.)
//   dp        plan/comm_volume.h's ring phases for the strategy over the gradient group dp·cp, with 2-byte grads and
//             params (C1's recipe); with experts on ep > 1 plain DP all-reduces the dense gradients over dp·ep and
//             the experts' over dp, ZeRO shards over dp and then all-reduces its dense shard over ep (β of each
//             phase by its group's span; parallel/across_ep.cpp). Gradient reduction overlaps backward (DP and ZeRO-1
//             the last micro-batch's, ZeRO-2 and -3 every micro-batch's; C9), parameter all-gathers overlap forward
//             (ZeRO-1/2's after the step: the next step's first micro-batch; ZeRO-3's every micro-batch, C15); exposed
//             = what exceeds its window, and never less than the last bucket (α + one bucket at β); ZeRO's
//             all-reduce of the dense shard over ep runs once after the last micro-batch: all exposed.
//   tp        4 all-reduces per layer per micro-batch of b·(s/c)·h bf16 elements (C17, C18), all exposed (the next
//             GEMM needs the result); with SP (C23) each is an all-gather and a reduce-scatter, and backward
//             gathers each region's input again: 10 one-way ring calls of (t−1)/t of the message, 1.25× plain tp's
//             bytes (plan/tp_bytes.h's regather). The vocabulary-parallel head's few all-reduces are left out.
//   cp        ring attention's K/V (and dK/dV) messages (plan/cp_bytes.h, bf16), all exposed.
//   pp        one b·(s/c)·h bf16 message per micro-batch per border each way (C22; with SP a stage sends its s/t rows);
//   in 1F1B's steady state they hide
//             behind compute, exposed only where the pipeline fills and drains: 2·(p−1) messages.
//   ep        per MoE block and micro-batch the counts, dispatch and combine all-to-alls forward, dispatch and
//             combine backward at an even load (plan/search_experts.h, plan/ep_bytes.h), all exposed.
//   bubble    1F1B's idle time over the ideal, (p−1)/m × compute (parallel/schedule.h's bubble_formula, C20).
//   update    the optimizer's elementwise step over the parameters a GPU updates: its whole slice under DP, its
//             1/(dp·cp) shard under ZeRO (C11–C13 divide this time too) × seconds per parameter; after the last
//             gradient, so exposed. The default streams AdamW's ≈ 30 B per parameter (read the bf16 gradient, the
//             fp32 master, m and v; write master, m, v and the bf16 copy) at an A100's 2 TB/s HBM: 15 ps.
// Left out: memory bandwidth (flash's real speed-up is fewer HBM reads, which a FLOP count cannot see), kernel
// efficiency beyond the one rate, stragglers, and congestion between axes sharing a link.
#pragma once

#include <cstdint>

#include "plan/layout_search.h"

namespace shardlab::plan {

// The machine: what a calibration measures.
struct StepRates {
  double gpu_flops = 312e12;           // FLOP/s per GPU (A100 bf16 dense peak)
  double intra_bytes_per_s = 300e9;    // β inside a node (the chapter's 300 GB/s)
  double inter_bytes_per_s = 25e9;     // β between nodes (the chapter's 25 GB/s)
  double latency_s = 10e-6;            // α per message
  std::uint64_t ranks_per_node = 8;    // K
  double bucket_bytes = 25e6;          // DP's gradient bucket (the last one is exposed)
  double update_s_per_param = 15e-12;  // the optimizer step per parameter updated (30 B at 2 TB/s)
  double gpu_flops_flash = 0;          // flash attention's layouts, when calibrated apart (0: gpu_flops)
  // One rank alone on a machine of idle cores (a calibration: its caches and memory unshared; 0: the rates above).
  double gpu_flops_alone = 0, gpu_flops_flash_alone = 0;
  double flops_for(AttentionKernel a) const {
    return a == AttentionKernel::flash && gpu_flops_flash > 0 ? gpu_flops_flash : gpu_flops;
  }
  double flops_alone_for(AttentionKernel a) const {
    const double alone = a == AttentionKernel::flash ? gpu_flops_flash_alone : gpu_flops_alone;
    return alone > 0 ? alone : flops_for(a);
  }
};

// FLOPs of one GPU's share of a step.
struct StepFlops {
  double base = 0;       // forward + backward
  double recompute = 0;  // recompute's extra forward work
  double total() const { return base + recompute; }
};
StepFlops step_flops_per_gpu(const SearchModel& m, const SearchLayout& l, std::uint64_t global_batch);

// Seconds of one ring collective of n members over a buffer of `bytes`: α + (2 for an all-reduce, else 1)·(n−1)/n ·
// bytes/β; 0 for n < 2.
double ring_seconds(bool all_reduce, std::uint64_t n, double bytes, double beta, double alpha);

// Does a group spanning `span` consecutive GPUs stay inside one node of K (N GPUs in all)?
bool inside_node(std::uint64_t span, std::uint64_t ranks_per_node, std::uint64_t gpus);

// Parameters one GPU's optimizer step updates: its slice (DP) or its shard of it over dp·cp (ZeRO).
double updated_params_per_gpu(const SearchLayout& l, const SearchMemory& mem);

struct StepTime {
  double compute = 0, dp = 0, tp = 0, pp = 0, cp = 0, ep = 0, bubble = 0, update = 0;  // seconds; comm exposed
  double flops = 0;                                                                    // per GPU
  double dp_bytes = 0, tp_bytes = 0, pp_bytes = 0, cp_bytes = 0, ep_bytes = 0;         // sent per GPU per step
  double dp_total = 0;  // dp communication before overlap, seconds
  bool dp_inter = false, pp_inter = false, cp_inter = false, tp_inter = false, ep_inter = false;
  double comm() const { return dp + tp + pp + cp + ep; }
  double step() const { return compute + comm() + bubble + update; }
};
StepTime step_time(const SearchModel& m, const SearchLayout& l, std::uint64_t global_batch, const StepRates& rates);

}  // namespace shardlab::plan
