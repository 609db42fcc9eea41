// check/activation_check.cpp — a rank's activation items and peak against the formulas (see activation_check.h).
#include "check/activation_check.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <tuple>

#include "check/ledger_read.h"

namespace shardlab::plan {

namespace {
using u64 = std::uint64_t;
}  // namespace

StageShape stage_shape(const LedgerCheck& c) {
  const ActivationShape& a = c.activation_shape;
  return StageShape{GptDims{a.vocab, a.seq, a.hidden, a.layers, a.moe},
                    c.tp,
                    c.sequence_parallel,
                    c.pp,
                    c.virtual_stages,
                    c.pp_layers,
                    c.cp,
                    c.ep};
}

StageFacts stage_facts(const LedgerCheck& c, int stage) {
  const StageShape sh = stage_shape(c);
  const PipelinePartition part = stage_partition(sh);
  const std::vector<StageActions> actions =
      make_schedule(c.schedule, c.pp, static_cast<int>(c.layout.accum), c.virtual_stages);
  return {static_cast<u64>(stage_blocks(sh, stage)), part.held_units(stage).back(),
          stage_activation_peak(c.activation_shape, part, stage, actions[stage])};
}

namespace {
// An activation item's totals against its size and count: everything allocated, nothing held at the end (a
// record is released after its backward), a peak of whole records within both.
void check_item_totals(const Json& it, const std::string& where, u64 each, u64 allocations, u64 category_peak) {
  const u64 total = need_u64(it, "bytes_allocated", where), peak = need_u64(it, "peak", where),
            current = need_u64(it, "current", where);
  if (total != each * allocations)
    throw std::runtime_error(where + ": bytes_allocated " + std::to_string(total) + " is not bytes_each " +
                             std::to_string(each) + " × allocations " + std::to_string(allocations));
  if (current != 0)
    throw std::runtime_error(where + ": " + std::to_string(current) +
                             " bytes still held at the end of the run (every record is released after its backward)");
  if (peak > total || (each != 0 && peak % each != 0) || peak > category_peak)
    throw std::runtime_error(where + ": peak " + std::to_string(peak) + " is not a whole number of records of " +
                             std::to_string(each) + " bytes within the " + std::to_string(total) +
                             " allocated and the activation peak " + std::to_string(category_peak));
}

}  // namespace

// Every saved tensor of one rank against the itemised formula, and the activation peak.
void check_activations(const Json& rank, const LedgerCheck& c, u64 micro_batches, const StageFacts& st, RankCheck* rc) {
  const ActivationShape& s = c.activation_shape;
  const u64 L = st.blocks, twice = s.recompute == Recompute::full ? 2 : 1;
  std::map<std::string, std::pair<u64, u64>> formula;  // item → bytes each, allocations
  for (const ActivationItem& i : block_items(s))
    formula[i.name] = {i.bytes, L * micro_batches * (i.name == "block.x" ? 1 : twice)};
  if (st.head)
    for (const ActivationItem& i : head_items(s)) formula[i.name] = {i.bytes, micro_batches};
  const Json& memory = need(rank, "memory", "rank " + std::to_string(rc->rank));
  const Json items = memory.contains("items") ? memory.at("items") : Json::object();
  std::map<std::string, std::pair<u64, u64>> measured;
  for (const auto& [name, it] : items.items()) {
    if (name.rfind("block.", 0) != 0 && name.rfind("head.", 0) != 0) continue;  // activations only
    const std::string where = "rank " + std::to_string(rc->rank) + " memory.items." + name;
    measured[name] = {it.contains("bytes_each") ? need_u64(it, "bytes_each", where) : ~u64(0),
                      need_u64(it, "allocations", where)};
  }
  std::vector<std::string> names;  // the formula's order (the model's), then anything the formula lacks
  for (const ActivationItem& i : block_items(s)) names.push_back(i.name);
  if (st.head)
    for (const ActivationItem& i : head_items(s)) names.push_back(i.name);
  for (const auto& [n, v] : measured)
    if (!formula.count(n)) names.push_back(n);
  for (const std::string& name : names) {
    ActivationRow r;
    r.item = name;
    r.in_formula = formula.count(name) > 0;
    r.in_ledger = measured.count(name) > 0;
    if (r.in_formula) std::tie(r.formula_bytes, r.formula_allocations) = formula[name];
    if (r.in_ledger) std::tie(r.measured_bytes, r.measured_allocations) = measured[name];
    r.match = r.in_formula && r.in_ledger && r.formula_bytes == r.measured_bytes &&
              r.formula_allocations == r.measured_allocations;
    // An item that matches the formula: its other numbers follow from those two and from the run, and a
    // ledger contradicting itself there (edited, or a bug in its bookkeeping) is refused, not passed.
    if (r.match)
      check_item_totals(items.at(name), "rank " + std::to_string(rc->rank) + " memory.items." + name, r.measured_bytes,
                        r.measured_allocations,
                        need_u64(need(memory, "activation", "memory"), "peak", "memory.activation"));
    rc->activations.push_back(r);
  }
  rc->peak_formula = st.peak;
  rc->peak_measured = need_u64(need(memory, "activation", "memory"), "peak", "memory.activation");
}

namespace {
// One item's formula over the run: its allocations (a zero-row array is none), their bytes, whether all are the
// same size, its peak.
struct ItemSum {
  u64 allocations = 0, total = 0, each = 0, peak = 0;
  bool uniform = true;
  void add(u64 bytes, u64 times) {
    if (bytes == 0) return;
    if (allocations && bytes != each) uniform = false;
    each = bytes, allocations += times, total += bytes * times;
  }
};

// The rank's chunks and what each forward of them keeps.
struct RunRecords {
  const ActivationShape& s;
  std::vector<ChunkSpec> chunks;
  // Every item of block l (its MoE rows `r` when it has experts) for a micro-batch of shape `a`.
  std::vector<ActivationItem> block(const ActivationShape& a, const MoeRows* r) const {
    return r ? moe_block_items(a, *r) : block_items(a);
  }
  // One forward's records on chunk c (f: its MoE blocks' rows), all items or only `only`.
  ChunkRecords records(const ActivationShape& a, int c, const std::vector<MoeRows>& f, const std::string& only) const {
    const ChunkSpec& spec = chunks[c];
    auto pick = [&](const ActivationItem& i) { return only.empty() || i.name == only ? i.bytes : u64(0); };
    ChunkRecords out;
    size_t m = 0;
    for (int l = spec.first_block; l < spec.end_block; ++l) {
      const bool moe = s.moe.in_block(l);
      u64 rest = 0;
      for (const ActivationItem& i : block(a, moe ? &f.at(m) : nullptr)) {
        if (i.name == "block.x")
          out.x = pick(i);
        else
          rest += pick(i);
      }
      m += moe;
      out.rest.push_back(rest);
    }
    out.head = spec.head;
    if (spec.head)
      for (const ActivationItem& i : head_items(a)) (i.name == "head.x" ? out.head_x : out.head_rest) += pick(i);
    return out;
  }
};
}  // namespace

void check_moe_activations(const Json& rank, const LedgerCheck& c, const std::vector<ChunkRows>& rows, RankCheck* rc) {
  const ActivationShape& s = c.activation_shape;
  const PipelinePartition part = stage_partition(stage_shape(c));
  const int stage = rc->pp_rank, v = part.virtual_stages;
  const u64 A = c.layout.accum, steps = c.steps, twice = s.recompute == Recompute::full ? 2 : 1;
  const bool full = s.recompute == Recompute::full;
  RunRecords run{s, {}};
  for (int k = 0; k < v; ++k) run.chunks.push_back(part.chunk(stage, k));
  const StageActions actions = make_schedule(c.schedule, c.pp, static_cast<int>(A), v)[stage];
  // Each item over the run's training forwards (a recompute allocates the record again), in the model's order.
  std::vector<std::string> names;
  std::map<std::string, ItemSum> formula;
  auto note = [&](const ActivationItem& i, u64 times) {
    if (!formula.count(i.name)) names.push_back(i.name);
    formula[i.name].add(i.bytes, times);
  };
  for (u64 f = 0; f < steps * A; ++f)
    for (int k = 0; k < v; ++k) {
      const ChunkSpec& spec = run.chunks[k];
      size_t m = 0;
      for (int l = spec.first_block; l < spec.end_block; ++l) {
        const bool moe = s.moe.in_block(l);
        for (const ActivationItem& i : run.block(s, moe ? &rows[k].train.at(f).at(m) : nullptr))
          note(i, i.name == "block.x" ? 1 : twice);
        m += moe;
      }
      if (spec.head)
        for (const ActivationItem& i : head_items(s)) note(i, 1);
    }
  // Peaks: each item's own and the category's, step by step; the category's also over evaluation's forwards.
  auto walk = [&](const std::string& only) {
    u64 peak = 0;
    for (u64 step = 0; step < steps; ++step)
      peak = std::max(peak, records_peak(actions, full, [&](int mb, int k) {
                        return run.records(s, k, rows[k].train.at(step * A + mb), only);
                      }));
    return peak;
  };
  for (const std::string& n : names) formula[n].peak = walk(n);
  rc->peak_formula = walk("");
  for (int k = 0; k < v; ++k)
    for (size_t e = 0; e < rows[k].eval.size(); ++e) {
      ActivationShape a = s;
      a.micro_batch = rows[k].eval_samples[e];
      rc->peak_formula = std::max(rc->peak_formula, forward_peak(run.records(a, k, rows[k].eval[e], ""), full));
    }
  const std::string who = "rank " + std::to_string(rc->rank);
  const Json& memory = need(rank, "memory", who);
  rc->peak_measured = need_u64(need(memory, "activation", who + " memory"), "peak", who + " memory.activation");
  const Json items = memory.contains("items") ? memory.at("items") : Json::object();
  for (const auto& [name, it] : items.items())
    if ((name.rfind("block.", 0) == 0 || name.rfind("head.", 0) == 0) && !formula.count(name)) names.push_back(name);
  for (const std::string& name : names) {
    ActivationRow r;
    r.item = name;
    r.totals = true;
    r.in_formula = formula.count(name) > 0;
    r.in_ledger = items.contains(name);
    if (r.in_formula) {
      const ItemSum& f = formula[name];
      r.varying = !f.uniform;
      r.formula_bytes = f.uniform ? f.each : 0;
      r.formula_allocations = f.allocations, r.formula_total = f.total, r.formula_peak = f.peak;
    }
    u64 current = 0;
    bool uniform = false;
    if (r.in_ledger) {
      const Json& it = items.at(name);
      const std::string w = who + " memory.items." + name;
      uniform = it.contains("bytes_each");
      r.measured_bytes = uniform ? need_u64(it, "bytes_each", w) : 0;
      r.measured_allocations = need_u64(it, "allocations", w);
      r.measured_total = need_u64(it, "bytes_allocated", w);
      r.measured_peak = need_u64(it, "peak", w);
      current = need_u64(it, "current", w);
    }
    r.match = r.in_formula && r.in_ledger && r.formula_allocations == r.measured_allocations &&
              r.formula_total == r.measured_total && r.formula_peak == r.measured_peak && current == 0 &&
              uniform == !r.varying && r.formula_bytes == r.measured_bytes;
    rc->activations.push_back(r);
  }
}

}  // namespace shardlab::plan
