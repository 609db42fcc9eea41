// plan/moe_items.cpp — a MoE block's saved tensors and the peak of records of varying size (see moe_items.h).
#include "plan/moe_items.h"

#include <algorithm>

namespace shardlab::plan {

namespace {
using u64 = std::uint64_t;
constexpr u64 kInt32 = 4;

ActivationItem item(const char* name, const char* what, const std::string& formula, u64 elements, u64 width,
                    bool kept) {
  return ActivationItem{name, what, formula, elements, elements * width, kept};
}
}  // namespace

u64 moe_routed_slots(const ActivationShape& s) { return s.positions() * s.micro_batch * s.moe.top_k; }

MoeRows dropless_rows(const ActivationShape& s) {
  const u64 slots = moe_routed_slots(s);
  return {slots, slots, slots};
}

bool is_moe_item(const std::string& name) { return name.rfind("block.moe.", 0) == 0; }

std::vector<ActivationItem> moe_block_items(const ActivationShape& s, const MoeRows& r) {
  std::vector<ActivationItem> v;
  for (ActivationItem& i : block_items(s))  // attention and the LayerNorms as in a dense block
    if (i.name != "block.fc" && i.name != "block.gelu") v.push_back(std::move(i));
  const u64 R = s.positions() * s.micro_batch, E = s.moe.experts, k = s.moe.top_k, C = s.hidden,
            F = s.moe.width(s.hidden), ws = s.stat_width, groups = s.micro_batch;  // a routing group: a sample
  const bool all = s.recompute != Recompute::full;
  v.push_back(item("block.moe.probs", "the router's softmax over the experts", "s·b·E · w_s", R * E, ws, all));
  v.push_back(item("block.moe.lse", "each token's logsumexp of the router (z-loss)", "s·b · w_s", R, ws, all));
  v.push_back(item("block.moe.gates", "the k gates, renormalised", "s·b·k · w_s", R * k, ws, all));
  v.push_back(
      item("block.moe.slots", "each slot's expert, row and the list (int32)", "3·s·b·k · 4", 3 * R * k, kInt32, all));
  v.push_back(item("block.moe.counts", "slots per sample and expert, first rows (int32)", "(b·E + E + 1) · 4",
                   groups * E + E + 1, kInt32, all));
  v.push_back(
      item("block.moe.expert_in", "the rows this rank's experts computed", "m·h · w_s", r.received * C, ws, all));
  v.push_back(item("block.moe.pre", "the experts' fc output: GELU's input", "m·F · w_s", r.received * F, ws, all));
  v.push_back(item("block.moe.act", "GELU output: the experts' proj input", "m·F · w_s", r.received * F, ws, all));
  v.push_back(item("block.moe.slot_out", "each kept slot's expert output", "n·h · w_s", r.kept * C, ws, all));
  return v;
}

namespace {
// The walk of one forward (as ModelChunk::forward allocates) and of one backward (as it frees), on `alive`.
struct Walk {
  bool full;
  u64 alive = 0, peak = 0;
  void add(u64 b) { peak = std::max(peak, alive += b); }
  void forward(const ChunkRecords& r) {
    const size_t n = r.rest.size();
    add(r.x);  // block 0's input (the embedding's output, or the previous chunk's)
    for (size_t l = 0; l < n; ++l) {
      add(r.rest[l]);  // the record, as the block's forward allocates it
      if (l + 1 < n) add(r.x);
      if (l + 1 == n && r.head) add(r.head_x);
      if (full) alive -= r.rest[l];  // full recompute keeps only the input
    }
    if (r.head) add(r.head_rest);
  }
  void backward(const ChunkRecords& r) {
    const size_t n = r.rest.size();
    if (r.head) alive -= r.head_rest + r.head_x;
    for (size_t l = n; l-- > 0;) {
      if (full) add(r.rest[l]);  // the record again, recomputed
      alive -= r.rest[l] + r.x;
    }
  }
};
}  // namespace

u64 records_peak(const StageActions& actions, bool full_recompute, const RecordsOf& records) {
  Walk w{full_recompute};
  for (const Action& a : actions) {
    if (a.act == Act::forward) w.forward(records(a.micro_batch, a.chunk));
    if (a.act == Act::backward) w.backward(records(a.micro_batch, a.chunk));
  }
  return w.peak;
}

u64 forward_peak(const ChunkRecords& r, bool full_recompute) {
  Walk w{full_recompute};
  w.forward(r);
  return w.peak;
}

u64 moe_model_activation_peak(const ActivationShape& s) {
  ChunkRecords r;
  r.head = true;
  for (u64 l = 0; l < s.layers; ++l) {
    u64 rest = 0;
    for (const ActivationItem& i : s.moe.in_block(l) ? moe_block_items(s, dropless_rows(s)) : block_items(s)) {
      if (i.name == "block.x")
        r.x = i.bytes;
      else
        rest += i.bytes;
    }
    r.rest.push_back(rest);
  }
  for (const ActivationItem& i : head_items(s)) (i.name == "head.x" ? r.head_x : r.head_rest) += i.bytes;
  Walk w{s.recompute == Recompute::full};
  w.forward(r);
  w.backward(r);
  return w.peak;
}

}  // namespace shardlab::plan
