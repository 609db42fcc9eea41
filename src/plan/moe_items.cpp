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
// The walk of one forward (as ModelChunk::forward allocates) and of one backward (as it frees), part by part.
struct Walk {
  bool full;
  std::vector<u64> alive, peak;
  Walk(bool f, size_t parts) : full(f), alive(parts, 0), peak(parts, 0) {}
  void add(const std::vector<u64>& b) {
    for (size_t i = 0; i < alive.size(); ++i) peak[i] = std::max(peak[i], alive[i] += b[i]);
  }
  void sub(const std::vector<u64>& b) {
    for (size_t i = 0; i < alive.size(); ++i) alive[i] -= b[i];
  }
  void forward(const PartRecords& r) {
    const size_t n = r.rest.size();
    add(r.x);  // block 0's input (the embedding's output, or the previous chunk's)
    for (size_t l = 0; l < n; ++l) {
      add(r.rest[l]);  // the record, as the block's forward allocates it
      if (l + 1 < n) add(r.x);
      if (l + 1 == n && r.head) add(r.head_x);
      if (full) sub(r.rest[l]);  // full recompute keeps only the input
    }
    if (r.head) add(r.head_rest);
  }
  void backward(const PartRecords& r) {
    if (r.head) sub(r.head_rest), sub(r.head_x);
    for (size_t l = r.rest.size(); l-- > 0;) {
      if (full) add(r.rest[l]);  // the record again, recomputed
      sub(r.rest[l]), sub(r.x);
    }
  }
};

PartRecords one_part(const ChunkRecords& r) {
  PartRecords p{{r.x}, {}, r.head, {r.head_x}, {r.head_rest}};
  for (u64 b : r.rest) p.rest.push_back({b});
  return p;
}
}  // namespace

std::vector<u64> part_peaks(const StageActions& actions, bool full_recompute, size_t parts,
                            const std::function<const PartRecords&(int, int)>& records) {
  Walk w(full_recompute, parts);
  for (const Action& a : actions) {
    if (a.act == Act::forward) w.forward(records(a.micro_batch, a.chunk));
    if (a.act == Act::backward) w.backward(records(a.micro_batch, a.chunk));
  }
  return w.peak;
}

u64 records_peak(const StageActions& actions, bool full_recompute, const RecordsOf& records) {
  PartRecords r;
  return part_peaks(actions, full_recompute, 1,
                    [&](int mb, int chunk) -> const PartRecords& { return r = one_part(records(mb, chunk)); })[0];
}

u64 forward_peak(const ChunkRecords& r, bool full_recompute) {
  Walk w(full_recompute, 1);
  w.forward(one_part(r));
  return w.peak[0];
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
  Walk w(s.recompute == Recompute::full, 1);
  const PartRecords p = one_part(r);
  w.forward(p);
  w.backward(p);
  return w.peak[0];
}

}  // namespace shardlab::plan
