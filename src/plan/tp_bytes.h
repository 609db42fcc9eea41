// plan/tp_bytes.h — tensor and sequence parallelism's formulas (§2.4.6, §2.4.8; claims C17–C19,
// C23): what one tp rank holds of the parameters, what it sends per optimizer step on the tp axis with the
// trainer's ring collectives, and the chapter's C18 example. The trainer's rules, so `plan --ledger` can
// compare a run's tp bytes exactly (activations per rank: plan/activation_items.h with tp and SP).
//
// Legend: t tensor-parallel ranks, b micro-batch, s sequence, h hidden, L layers, V vocab, A micro-batches
// per step, e bytes of a communicated activation (the compute type: 4 in f32 and with --mixed bf16, 8 in
// f64; the chapter's C18 uses 2), n = b·s·h the (b, s, h) tensor of one region border (b·(s/c)·h with
// context parallelism: a rank's regions hold its s/c tokens of each sample, and so does the head).
//
// Parameters per tp rank (model/param_layout.h): the column-parallel QKV and fc and the row-parallel W^O
// and fc-proj split by t, the LM head's vocabulary split by t (V divisible by t), everything else replicated:
//   Ψ_t = V·C + T·C + L·(12C²/t + 7C/t + 6C) + 2C + C·V/t
// Traffic per step, per tp rank (ring collectives over t members, claim C8's rule):
//   tensor parallel   L·A·4 all-reduces of n elements (2 forward + 2 backward, C17), + L·A·2 with full
//                     recompute (the recomputed forward's two); a MoE block (claim C25) has only attention's
//                     region: half of that;
//   + sequence par.   instead L·A·4 all-gathers and L·A·4 reduce-scatters of n (chunks of n/t: the same
//                     bytes as the all-reduces, C23), + 2 each per layer with full recompute, + L·A·2
//                     all-gathers that re-gather each region's input for the weight gradients
//                     ("regather"), + one all-reduce per step of the replicated tensors' gradients in this
//                     rank's range ("replicated_grads", gradient bytes);
//   + the vocabulary-parallel head ("vocab", on the stage holding the head; N = b·s rows, the head runs
//                     every position): A·3 all-reduces of N values (Megatron's parallel cross-entropy: the
//                     row maxima — an all-reduce MAX, the same messages as a sum — the Σ exp and the target
//                     logits, each in the compute type, e bytes) forward, + A all-reduces of n (f's backward:
//                     the head input's gradient d_x = Σ_i dlogits_i·W_i); with sequence parallelism instead
//                     of that all-reduce A·2 all-gathers of n along s (the head's input, forward, and again
//                     in backward for the weight gradient: only the shard is kept) + A reduce-scatters of n
//                     (the input gradient). Full recompute re-runs no part of the head: nothing more.
// Leaves out: the scalar reductions of the loss and the gradient norm, evaluation, checkpoints.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "model/activation_policy.h"
#include "plan/comm_volume.h"
#include "plan/state_bytes.h"

namespace shardlab::plan {

// One tp rank's tensors in the layout's order: (elements, replicated on every tp rank); held: the units of
// a pipeline stage (empty: all). A MoE block's router and its E/ep experts are whole on every tp rank.
std::vector<std::pair<std::uint64_t, bool>> tp_tensor_runs(const GptDims& d, std::uint64_t t,
                                                           const std::vector<bool>& held = {}, std::uint64_t ep = 1);
std::uint64_t tp_param_count(const GptDims& d, std::uint64_t t, std::uint64_t ep = 1);  // Ψ_t
// Elements of replicated tensors inside the flat range [lo, hi) of a tp rank's layout.
std::uint64_t replicated_in_range(const GptDims& d, std::uint64_t t, std::uint64_t lo, std::uint64_t hi,
                                  const std::vector<bool>& held = {});

struct TpShape {
  GptDims gpt;
  std::uint64_t micro_batch = 1, accum = 1;
  std::uint64_t tp = 1;
  bool sequence_parallel = false;
  Recompute recompute = Recompute::none;
  std::uint64_t act_bytes = 4;   // e
  std::uint64_t grad_bytes = 4;  // the gradient store's element (replicated_grads)
  std::vector<bool> held;        // a pipeline stage's units (empty: all; the blocks held set L)
  std::uint64_t cp = 1;          // context-parallel ranks: the regions and the head hold s/c tokens of each sample
  bool exact = false;            // --exact: the sums travel as 32-byte order-free sums (model/linear_exact.h)
};

// One kind of tp collective of a step, as one rank sees it.
struct TpPhase {
  std::string what;     // e.g. "all-reduce of W^O's partial sums (forward)"
  std::string purpose;  // the comm ledger's purpose: "", "regather", "replicated_grads" or "vocab"
  RingOp op = RingOp::all_reduce;
  std::uint64_t times = 0;     // calls per step
  std::uint64_t payload = 0;   // elements of the buffer per call
  std::uint64_t elements = 0;  // elements this rank sends per call
  std::uint64_t elem_bytes = 0;
  std::uint64_t bytes() const { return times * elements * elem_bytes; }
};

// The tp phases of one step for tp rank `rank`; [grad_lo, grad_hi) is where its gradients hold their final
// sums (the whole layout under DP, the shard under ZeRO), for sequence parallelism's replicated gradients.
std::vector<TpPhase> tp_step_phases(const TpShape& s, std::uint64_t rank, std::uint64_t grad_lo, std::uint64_t grad_hi);
// Bytes per step by purpose: region traffic (""), "regather", "replicated_grads", "vocab".
struct TpStepBytes {
  std::uint64_t region = 0, regather = 0, replicated_grads = 0, vocab = 0;
  std::uint64_t total() const { return region + regather + replicated_grads + vocab; }
};
TpStepBytes tp_step_bytes(const std::vector<TpPhase>& phases);

}  // namespace shardlab::plan
