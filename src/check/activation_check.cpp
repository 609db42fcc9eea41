// check/activation_check.cpp — a rank's activation items and peak against the formulas (see activation_check.h).
#include "check/activation_check.h"

#include <algorithm>
#include <functional>
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
// same size.
struct ItemSum {
  u64 allocations = 0, total = 0, each = 0;
  bool uniform = true;
  void add(u64 bytes, u64 times) {
    if (bytes == 0) return;
    if (allocations && bytes != each) uniform = false;
    each = bytes, allocations += times, total += bytes * times;
  }
};

// The rank's chunks and what each forward of them keeps, item by item: part i of a record is item i's bytes, the
// last part all of them.
struct RunRecords {
  const ActivationShape& s;
  std::vector<ChunkSpec> chunks;
  std::vector<std::string> names;  // the model's order: a dense block's, a MoE block's own, the head's
  std::map<std::string, size_t> index;
  explicit RunRecords(const ActivationShape& shape) : s(shape) {
    auto note = [&](const ActivationItem& i) {
      if (index.emplace(i.name, names.size()).second) names.push_back(i.name);
    };
    for (const ActivationItem& i : block_items(s)) note(i);
    if (s.moe.on())
      for (const ActivationItem& i : moe_block_items(s, MoeRows{})) note(i);
    for (const ActivationItem& i : head_items(s)) note(i);
  }
  size_t parts() const { return names.size() + 1; }
  // One forward's records on chunk c (f: its MoE blocks' rows) for a micro-batch of shape `a`; each item allocated
  // is handed to `allocated` (nullptr: not counted).
  PartRecords records(const ActivationShape& a, int c, const std::vector<MoeRows>& f,
                      const std::function<void(const ActivationItem&)>& allocated) const {
    const ChunkSpec& spec = chunks[c];
    const size_t P = parts();
    PartRecords out{std::vector<u64>(P, 0), {}, spec.head, std::vector<u64>(P, 0), std::vector<u64>(P, 0)};
    auto put = [&](std::vector<u64>& v, const ActivationItem& i) {
      v[index.at(i.name)] += i.bytes, v[P - 1] += i.bytes;
      if (allocated) allocated(i);
    };
    size_t m = 0;
    for (int l = spec.first_block; l < spec.end_block; ++l) {
      const bool moe = s.moe.in_block(l);
      out.rest.emplace_back(P, 0);
      std::vector<u64> x(P, 0);
      for (const ActivationItem& i : moe ? moe_block_items(a, f.at(m)) : block_items(a))
        put(i.name == "block.x" ? x : out.rest.back(), i);
      out.x = x;  // every block's input has the same size
      m += moe;
    }
    if (spec.head)
      for (const ActivationItem& i : head_items(a)) put(i.name == "head.x" ? out.head_x : out.head_rest, i);
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
  if (steps * A > (u64(1) << 22))
    throw std::runtime_error("layout.steps × accum = " + std::to_string(steps * A) +
                             " forwards: more than a MoE ledger check walks (4,194,304)");
  RunRecords run(s);
  for (int k = 0; k < v; ++k) run.chunks.push_back(part.chunk(stage, k));
  const StageActions actions = make_schedule(c.schedule, c.pp, static_cast<int>(A), v)[stage];
  // Step by step: each forward's records once (a recompute allocates the record again), then the schedule's walk.
  std::map<std::string, ItemSum> formula;
  std::vector<u64> peaks(run.parts(), 0);
  std::vector<std::vector<PartRecords>> step_records(A, std::vector<PartRecords>(v));
  for (u64 step = 0; step < steps; ++step) {
    for (u64 mb = 0; mb < A; ++mb)
      for (int k = 0; k < v; ++k)
        step_records[mb][k] = run.records(
            s, k, rows[k].train.empty() ? std::vector<MoeRows>{} : rows[k].train.at(step * A + mb),
            [&](const ActivationItem& i) {
              formula[i.name].add(i.bytes, i.name == "block.x" || i.name.rfind("head.", 0) == 0 ? 1 : twice);
            });
    const std::vector<u64> p = part_peaks(actions, full, run.parts(),
                                          [&](int mb, int k) -> const PartRecords& { return step_records[mb][k]; });
    for (size_t i = 0; i < p.size(); ++i) peaks[i] = std::max(peaks[i], p[i]);
  }
  // The category's peak: training's, and each evaluation forward's (its records dropped after it).
  rc->peak_formula = peaks.back();
  for (int k = 0; k < v; ++k)
    for (size_t e = 0; e < rows[k].eval.size(); ++e) {
      ActivationShape a = s;
      a.micro_batch = rows[k].eval_samples[e];
      const PartRecords r = run.records(a, k, rows[k].eval[e], nullptr);
      ChunkRecords total{r.x.back(), {}, r.head, r.head_x.back(), r.head_rest.back()};
      for (const std::vector<u64>& b : r.rest) total.rest.push_back(b.back());
      rc->peak_formula = std::max(rc->peak_formula, forward_peak(total, full));
    }
  std::vector<std::string> names;  // what the formula allocates, then what only the ledger has
  for (const std::string& n : run.names)
    if (formula.count(n) && formula.at(n).allocations > 0) names.push_back(n);
  const std::string who = "rank " + std::to_string(rc->rank);
  const Json& memory = need(rank, "memory", who);
  rc->peak_measured = need_u64(need(memory, "activation", who + " memory"), "peak", who + " memory.activation");
  const Json items = memory.contains("items") ? memory.at("items") : Json::object();
  for (const auto& [name, it] : items.items())
    if ((name.rfind("block.", 0) == 0 || name.rfind("head.", 0) == 0) &&
        std::find(names.begin(), names.end(), name) == names.end())
      names.push_back(name);
  for (const std::string& name : names) {
    ActivationRow r;
    r.item = name;
    r.totals = true;
    r.in_formula = formula.count(name) > 0 && formula.at(name).allocations > 0;
    r.in_ledger = items.contains(name);
    if (r.in_formula) {
      const ItemSum& f = formula[name];
      r.varying = !f.uniform;
      r.formula_bytes = f.uniform ? f.each : 0;
      r.formula_allocations = f.allocations, r.formula_total = f.total, r.formula_peak = peaks[run.index.at(name)];
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
