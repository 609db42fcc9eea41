// plan/cp_bytes.cpp — context parallelism's formulas (see cp_bytes.h).
#include "plan/cp_bytes.h"

#include "model/ring_attention.h"

namespace shardlab::plan {

namespace {
using u64 = std::uint64_t;
}  // namespace

u64 cp_tokens_per_rank(const CpShape& s) { return s.seq / s.cp; }

u64 cp_message_elements(const CpShape& s) { return 2 * s.micro_batch * cp_tokens_per_rank(s) * (s.hidden / s.tp); }

u64 cp_message_bytes(const CpShape& s) { return cp_message_elements(s) * s.elem_bytes; }

CpLayerTraffic cp_layer_traffic(const CpShape& s) {
  CpLayerTraffic t;
  if (s.cp <= 1) return t;
  const u64 c = s.cp;
  t.forward_messages = c - 1;                                         // K/V to the next rank, c − 1 hops
  t.recompute_messages = s.recompute == Recompute::full ? c - 1 : 0;  // the recomputed forward's ring
  t.backward_messages = (c - 1) + c;                                  // K/V again; dK/dV home after c hops
  t.message_bytes = cp_message_bytes(s);
  return t;
}

CpStepBytes cp_step_bytes(const CpShape& s) {
  const CpLayerTraffic t = cp_layer_traffic(s);
  const u64 n = s.blocks * s.accum;
  return CpStepBytes{n * t.forward_bytes(), n * t.recompute_bytes(), n * t.backward_bytes(), n * t.messages()};
}

CpRingBuffers cp_ring_buffers(const CpShape& s, u64 capacity) {
  CpRingBuffers b;
  if (s.cp <= 1) return b;
  const u64 Tc = cp_tokens_per_rank(s), heads = s.heads / s.tp, e = s.elem_bytes;
  b.comm_buffer = 5 * capacity * Tc * 2 * (s.hidden / s.tp) * e;
  b.running_sum = capacity * heads * Tc * e;
  b.scratch = ring_scratch_elements(static_cast<int>(s.hidden / s.heads)) * e;
  return b;
}

u64 cp_causal_pairs(u64 seq, u64 cp, ContextSplit split, u64 rank) {
  if (cp <= 1 || split == ContextSplit::contiguous) {
    const u64 n = seq / cp;
    return n * (rank * n) + n * (n + 1) / 2;  // every earlier chunk whole, its own chunk's triangle
  }
  const u64 m = seq / (2 * cp), late = 2 * cp - 1 - rank;
  return m * (rank * m) + m * (m + 1) / 2 + m * (late * m) + m * (m + 1) / 2;
}

}  // namespace shardlab::plan
