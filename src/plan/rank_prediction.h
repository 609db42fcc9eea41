// plan/rank_prediction.h — what one layout of the trainer's own GPT will use on every rank, before it runs (claim
// C29: the cost each axis moves, C30: checked at small scale): model-state bytes, the activation peak and the bytes
// sent per step on each axis, from the very formulas `plan --ledger` holds a finished run to (check/ledger_check.h),
// and the step time those bytes and the FLOPs cost at a machine's rates (plan/step_time.h's StepRates).
//
// The layout is described the way the trainer writes it into ledger.json ("model" and "layout"), then read through
// the check's own readers (read_recipe, read_activation_shape, read_layout), so prediction and check derive the same
// groups, shards and stages. Per rank (its coordinates: comm/grid_coords.h):
//   model states  per_rank_model_state_bytes of its Ψ (its tp slice of its stage, its E/ep experts)
//   activations   the activation peak of its stage's schedule (plan/activation_items.h, pipeline_stages.h); with
//                 experts (one stage) plan/moe_items.h's at s·b·k rows per MoE block: exact on one ep rank (dropless,
//                 every slot computed at home), an even-load estimate under ep (the rows follow the routing)
//   dp bytes      step_comm_bytes over the gradient group; under ep the check's own ep_grad_step_bytes (dense runs
//                 over dp·ep, expert runs over dp, the engine's buckets) or, with ZeRO, ep_sharded_step_bytes (the
//                 dp rings, and the dense shard's all-reduce over ep: exact, booked on ep)
//   tp, pp, cp    tp_step_bytes of its slice, stage_p2p_sent_bytes, cp_step_bytes (ring attention)
//   ep            the all-to-alls (counts, dispatch, combine; plan/ep_bytes.h ep_block_calls) at an even load: every
//                 rank's s·b·k slots spread evenly over the experts, 1/e of them staying home. A dropless all-to-all
//                 moves what the router chose, so this is an estimate, not a check
// Step time (seconds) of a rank, every term exposed (the trainer's collectives block; nothing overlaps on a CPU rank):
//   compute  plan/step_time.h's FLOPs (6·N + 12·L·s·h per token, recompute's extra; with experts N counts the router
//            and the k expert MLPs a token visits, whole on every tp rank) of its own stage: the blocks' share by its
//            blocks, the head's 6·h·V per token on the last stage alone; ÷ the attention kernel's rate (a calibration:
//            the trainer's own forward and backward on one rank, elementwise work included, carried to both cores
//            busy — a 1-rank layout at the rate of one rank alone)
//   comm     per axis, bytes sent ÷ β + messages × α (β, α: intra-node; one host); ep's all-to-alls at the even
//            load, (e − 1) messages per call
//   update   the parameters it updates (its Ψ under DP, its shard under ZeRO) × update_s_per_param (a calibration:
//            the trainer's zero, fold, norm and AdamW per parameter)
//   bubble   1F1B at the slowest stage's pace, (m + p − 1)/m × that stage's compute, less this rank's own compute:
//            filling, draining, and waiting for a slower stage (C20)
// The step is the slowest rank's. Left out: smaller GEMMs running slower than the calibrated ones, ranks sharing a
// core (more ranks than cores: the time is not a prediction of anything then), MoE routing's own work.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/activation_policy.h"
#include "plan/step_time.h"

namespace shardlab::plan {

// A layout of the trainer's GPT, in the trainer's flags (train/train_config.h): AdamW, pure f32 or f64, or mixed bf16.
// Which layouts are valid is the trainer's to say (`plan --predict` asks train's own rules before predicting).
struct PredictSpec {
  std::uint64_t layers = 4, hidden = 64, heads = 4, seq = 64, vocab = 256;
  bool f64 = false;
  bool bf16 = false;  // --mixed bf16 (fp32 master, bf16 gradients): the chapter's recipe, 16 bytes per parameter
  std::uint64_t global_batch = 8, micro_batch = 2;
  std::uint64_t dp = 0, tp = 1, pp = 1, cp = 1, ep = 1;  // dp 0: what the world leaves
  std::uint64_t world = 1;
  int zero = 0;
  std::uint64_t experts = 0, top_k = 2;
  Recompute recompute = Recompute::none;
  AttentionKernel attention = AttentionKernel::naive;
  double bucket_mb = 1;
  bool sequence_parallel = false;  // --sequence-parallel: the regions' activations and tp's collectives along s
  bool exact = false;              // --exact: the sums as 32-byte order-free sums (bytes exact; time not modelled)
};

struct RankPrediction {
  int rank = 0;
  int dp = 0, tp = 0, pp = 0, cp = 0, ep = 0;  // coordinates
  std::uint64_t params = 0;                    // Ψ this rank holds
  std::uint64_t model_states = 0;              // bytes: param + grad + master + optimizer states
  bool activations_known = false;              // exactly
  bool activations_even = false;               // an even-load estimate (experts over ep)
  std::uint64_t activation_peak = 0;
  bool dp_known = false;
  std::uint64_t dp_bytes = 0, tp_bytes = 0, pp_bytes = 0, cp_bytes = 0;  // sent per step
  std::uint64_t ep_grad_bytes = 0;  // ZeRO with experts: the dense shard's all-reduce over ep (exact)
  bool ep_even = false;             // experts over ep: the all-to-alls at an even load
  std::uint64_t ep_all_to_all_bytes = 0;
  double dp_messages = 0, tp_messages = 0, pp_messages = 0, cp_messages = 0, ep_messages = 0;
  double flops = 0;                                                      // per step (formula)
  std::uint64_t updated_params = 0;                                      // what its optimizer step updates
  double compute = 0, dp_s = 0, tp_s = 0, pp_s = 0, cp_s = 0, ep_s = 0;  // seconds (dp_s… exposed communication)
  double update_s = 0, bubble = 0;
  double step() const { return compute + update_s + dp_s + tp_s + pp_s + cp_s + ep_s + bubble; }
};

struct LayoutPrediction {
  std::uint64_t world = 1, accum = 1;
  std::vector<RankPrediction> ranks;
  double step_seconds = 0;  // the slowest rank's
};

// Every rank's prediction. Throws std::runtime_error with one sentence on a layout the check's readers refuse (or the
// batch does not split: B % (dp·ep·b)).
LayoutPrediction predict_layout(const PredictSpec& s, const StepRates& rates);

// The trainer's ledger description of the layout (world_size, model, layout), as train/run_report.cpp writes it.
std::string describe_layout(const PredictSpec& s);

}  // namespace shardlab::plan
