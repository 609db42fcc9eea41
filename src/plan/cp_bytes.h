// plan/cp_bytes.h — context parallelism's formulas (§2.4.8, claim C24): the tokens a cp rank holds, the
// bytes ring attention sends around the cp ring, the ring's buffers, and the causal attention work of each
// rank under either split. The trainer's rules (parallel/context_parallel.h, model/ring_attention.h), so
// `plan --ledger` can compare a run's cp bytes exactly (activations per rank: plan/activation_items.h with cp).
//
// Legend: c context-parallel ranks, t tensor-parallel ranks, b micro-batch, s sequence, h hidden, a heads,
// L blocks this rank runs, A micro-batches per step, e bytes of a message element (the compute type: 4 in
// f32 and with --mixed bf16, 8 in f64).
//   tokens per sample on a rank   s/c (zigzag: chunks r and 2c−1−r of s/2c; contiguous: chunk r of s/c)
//   one message                   K and V of this rank's tokens and heads: 2·b·(s/c)·(h/t) elements
//   per layer per micro-batch     forward  (c−1) messages = (c−1)·2·b·(s/c)·(h/t)·e bytes
//                                 backward (c−1) K/V + c dK/dV = (2c−1)·2·b·(s/c)·(h/t)·e bytes
//                                 + one more forward ring with --recompute full (the block's forward again)
//   per step                      L·A·(the above); every rank sends the same (the ring is symmetric) and
//                                 receives exactly what it sends (booked as op "recv").
//   ring buffers                  comm_buffer: 5 messages' capacity (two K/V, three dK/dV);
//                                 workspace: the running sum b·(a/t)·(s/c) and ring_scratch_elements(h/a)
// Leaves out: evaluation's forward rings (booked apart, comm_eval), the loss's scalar sums over cp, the
// gradient rings over dp × cp (plan/comm_volume.h with N = dp·c), and time: the overlap is measured, not planned.
#pragma once

#include <cstdint>

#include "model/activation_policy.h"
#include "model/token_positions.h"

namespace shardlab::plan {

struct CpShape {
  std::uint64_t seq = 64, micro_batch = 1, hidden = 128, heads = 4;  // s, b, h, a
  std::uint64_t tp = 1, cp = 1;                                      // t, c
  std::uint64_t blocks = 4;                                          // L: the blocks this rank runs
  std::uint64_t accum = 1;                                           // A
  Recompute recompute = Recompute::none;
  std::uint64_t elem_bytes = 4;  // e
  bool exact = false;            // --exact: no ring, whole samples inside the regions (plan/exact_cp_bytes.h)
  bool head = true;              // this rank runs the LM head (the exact mode's all-to-alls around it)
};

std::uint64_t cp_tokens_per_rank(const CpShape& s);   // s/c
std::uint64_t cp_message_elements(const CpShape& s);  // 2·b·(s/c)·(h/t)
std::uint64_t cp_message_bytes(const CpShape& s);     // × e

// One rank's ring messages of one layer and one micro-batch.
struct CpLayerTraffic {
  std::uint64_t forward_messages = 0;    // c − 1
  std::uint64_t recompute_messages = 0;  // c − 1 with full recompute, else 0
  std::uint64_t backward_messages = 0;   // (c − 1) + c
  std::uint64_t message_bytes = 0;
  std::uint64_t forward_bytes() const { return forward_messages * message_bytes; }
  std::uint64_t recompute_bytes() const { return recompute_messages * message_bytes; }
  std::uint64_t backward_bytes() const { return backward_messages * message_bytes; }
  std::uint64_t messages() const { return forward_messages + recompute_messages + backward_messages; }
  std::uint64_t bytes() const { return messages() * message_bytes; }
};
CpLayerTraffic cp_layer_traffic(const CpShape& s);

// One rank's ring bytes per optimizer step: L·A layers' traffic.
struct CpStepBytes {
  std::uint64_t forward = 0, recompute = 0, backward = 0, messages = 0;
  std::uint64_t total() const { return forward + recompute + backward; }
};
CpStepBytes cp_step_bytes(const CpShape& s);

// The ring's buffers, allocated once for micro-batches of up to `capacity` samples (b by default).
struct CpRingBuffers {
  std::uint64_t comm_buffer = 0;  // bytes: 5 × capacity·(s/c)·2·(h/t)·e
  std::uint64_t running_sum = 0;  // bytes: capacity·(a/t)·(s/c)·e
  std::uint64_t scratch = 0;      // bytes: ring_scratch_elements(h/a)·e
  std::uint64_t workspace() const { return running_sum + scratch; }
};
CpRingBuffers cp_ring_buffers(const CpShape& s, std::uint64_t capacity);

// The (query, key) pairs rank `rank` scores under the causal mask, for one sample and head: the attention
// work it does. Contiguous: n = s/c, n·(r·n) + n(n+1)/2 (the last rank ~(2c−1)× the first's); zigzag: m = s/2c,
// (2c−1)·m² + m(m+1) on every rank.
std::uint64_t cp_causal_pairs(std::uint64_t seq, std::uint64_t cp, ContextSplit split, std::uint64_t rank);

}  // namespace shardlab::plan
