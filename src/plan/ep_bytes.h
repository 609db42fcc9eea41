// plan/ep_bytes.h — expert parallelism's formulas (§2.4.9, claim C25): what each all-to-all of a MoE layer moves,
// the bytes per layer at an even load, and the gradient all-reduces of a step, as the trainer does them
// (parallel/expert_parallel.h, parallel/gradient_sync.cpp), so `plan --ledger` can compare an ep run exactly.
//
// Legend: e ep ranks, E experts (E/e per rank), k slots per token, h hidden, b micro-batch, s sequence, w bytes of
// a row element (the compute type: 4 in f32 and with --mixed bf16, 8 in f64); of one MoE layer's micro-batch on a
// rank: n its kept slots (rows it sends out, its own among them), m the rows its experts compute (rows it
// receives), o the rows of its own slots for its own experts.
//   counts     an all-to-all of int32 counts, E/e per member each way: (e−1)·(E/e)·4 bytes sent and received
//   dispatch   an all-to-all(v) of rows of h elements: sends (n − o)·h·w, receives (m − o)·h·w
//   combine    the reverse: sends (m − o)·h·w, receives (n − o)·h·w
//   per MoE layer per micro-batch: forward counts + dispatch + combine; backward dispatch + combine (the output
//   gradients go the dispatch's way, the input gradients the combine's); full recompute adds a forward's three.
//   The comm ledger books each call's elements as everything sent plus everything received, this rank's own chunk
//   included (copied, never sent: no bytes), and bytes only for the other members' chunks (comm/p2p.cpp).
//   An even load (every rank's slots spread evenly over the experts): n = m = s·b·k, o = n/e, so each all-to-all
//   moves s·b·k·h·w·(e−1)/e bytes each way — 4 of them per layer and micro-batch (2 forward, 2 backward).
// Gradients (claim C25 beside C8): the dense parameters' gradients all-reduce over the dp·e ranks holding other
// samples, each expert's over the dp ranks holding the same experts (none when dp = 1): the engine's buckets (units
// in backward order, at least bucket_mb each), each cut into runs of dense and of expert tensors, each run one
// all-reduce in even chunks over its group.
//
// Leaves out: evaluation's exchanges (booked apart), the loss's scalar sums, the time an uneven load idles a rank
// (the trace's "moe combine" spans measure it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plan/moe_items.h"
#include "plan/state_bytes.h"

namespace shardlab::plan {

// One all-to-all as the comm ledger books it.
struct AllToAll {
  std::string purpose;  // "moe_counts" | "moe_dispatch" | "moe_combine"
  std::uint64_t elements = 0, elem_bytes = 0;
  std::uint64_t sent = 0, received = 0;  // bytes
};
AllToAll ep_counts_call(std::uint64_t experts, std::uint64_t ep);
AllToAll ep_dispatch_call(const MoeRows& r, std::uint64_t hidden, std::uint64_t elem_bytes);
AllToAll ep_combine_call(const MoeRows& r, std::uint64_t hidden, std::uint64_t elem_bytes);
// The calls of one MoE block of one micro-batch, in call order: forward (counts, dispatch, combine) or backward
// (with full recompute the forward's three first, then dispatch, combine).
std::vector<AllToAll> ep_block_calls(bool backward, bool full_recompute, const MoeRows& r, std::uint64_t hidden,
                                     std::uint64_t elem_bytes, std::uint64_t experts, std::uint64_t ep);

// C25 at an even load, per MoE layer and micro-batch: each rank's bytes sent (= received).
struct EpLayerBytes {
  std::uint64_t rows = 0;        // s·b·k slots the rank routes
  std::uint64_t all_to_all = 0;  // one dispatch or combine: s·b·k·h·w·(e−1)/e
  std::uint64_t counts = 0;      // the counts exchange: (e−1)·(E/e)·4
  std::uint64_t forward() const { return counts + 2 * all_to_all; }
  std::uint64_t backward() const { return 2 * all_to_all; }
  std::uint64_t total() const { return forward() + backward(); }
};
// tokens: s·b of the micro-batch on the rank. Exact when e divides tokens·k (else rounded down).
EpLayerBytes ep_even_layer_bytes(std::uint64_t tokens, std::uint64_t top_k, std::uint64_t hidden,
                                 std::uint64_t elem_bytes, std::uint64_t experts, std::uint64_t ep);

// One gradient all-reduce of a step: flat range [lo, hi) of the rank's layout, over the dense group or the
// experts' group.
struct GradRange {
  std::uint64_t lo = 0, hi = 0;
  bool expert = false;
};
// held: the units a pipeline stage holds (empty: all); padded: Ψ_pad of the rank's layout (the last unit carries the
// padding); bucket_elements: max(1, bucket_mb·10⁶ / the gradient element's bytes).
std::vector<GradRange> ep_grad_ranges(const GptDims& d, std::uint64_t tp, std::uint64_t ep,
                                      const std::vector<bool>& held, std::uint64_t padded,
                                      std::uint64_t bucket_elements);

}  // namespace shardlab::plan
