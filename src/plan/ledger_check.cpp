// plan/ledger_check.cpp — reads a trainer ledger.json and compares it with the formulas.
// See ledger_check.h for what is checked and what is left out.
#include "plan/ledger_check.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <tuple>

#include <nlohmann/json.hpp>

namespace shardlab::plan {

namespace {
using u64 = std::uint64_t;
using u128 = unsigned __int128;
using Json = nlohmann::json;

// Field readers: a missing or mistyped field throws with where it was expected.
const Json& need(const Json& obj, const char* key, const std::string& where) {
  if (!obj.is_object() || !obj.contains(key))
    throw std::runtime_error(std::string("missing \"") + key + "\" in " + where);
  return obj.at(key);
}
u64 need_u64(const Json& obj, const char* key, const std::string& where) {
  const Json& v = need(obj, key, where);
  if (!v.is_number_unsigned()) throw std::runtime_error(where + "." + key + " must be a non-negative integer");
  return v.get<u64>();
}
std::string need_string(const Json& obj, const char* key, const std::string& where) {
  const Json& v = need(obj, key, where);
  if (!v.is_string()) throw std::runtime_error(where + "." + key + " must be a string");
  return v.get<std::string>();
}
template <class T, class P>
T need_word(const Json& obj, const char* key, const std::string& where, P parse) {
  T value{};
  const Json& v = need(obj, key, where);
  const std::string s = v.is_string() ? v.get<std::string>() : v.dump();
  if (!parse(s, &value)) throw std::runtime_error("unknown " + where + "." + key + " \"" + s + "\"");
  return value;
}

Recipe read_recipe(const Json& model) {
  Recipe r;
  r.optimizer = need_word<Optimizer>(model, "optimizer", "model", parse_optimizer);
  r.dtype = need_word<Dtype>(model, "dtype", "model", parse_dtype);
  r.mixed = need_word<Mixed>(model, "mixed", "model", parse_mixed);
  if (r.mixed == Mixed::bf16) {  // only meaningful with mixed precision
    r.grad_accum = need_word<GradAccum>(model, "grad_accum_dtype", "model", parse_grad_accum);
    r.master = need_word<Master>(model, "master", "model", parse_master);
  }
  if (r.optimizer == Optimizer::sgd) {
    const Json& m = need(model, "momentum", "model");
    if (!m.is_number()) throw std::runtime_error("model.momentum must be a number");
    r.momentum = m.get<double>();
  }
  return r;
}

// claims C1, C3, C12: each category's current bytes must equal the formula (absent counts as 0).
std::vector<LedgerRow> check_states(const Json& rank, const PerCategory& formula, const std::string& where) {
  const Json& memory = need(rank, "memory", where);
  std::vector<LedgerRow> rows;
  for (int i = 0; i < kNumCategories; ++i) {
    LedgerRow row;
    row.category = category_at(i);
    row.formula = formula.v[i];
    const char* name = mem_name(row.category);
    if (memory.is_object() && memory.contains(name)) {
      row.present = true;
      row.measured = need_u64(memory.at(name), "current", where + " memory." + name);
    }
    row.match = row.measured == row.formula;
    rows.push_back(row);
  }
  return rows;
}

// Sums comm.totals entries of ring reduce_scatter / all_gather / all_reduce on axis "dp" by op.
StepComm measured_dp_ring(const Json& rank, const std::string& where) {
  const Json& comm = need(rank, "comm", where);
  const Json& totals = need(comm, "totals", where + ".comm");
  if (!totals.is_array()) throw std::runtime_error(where + ".comm.totals must be an array");
  StepComm m;
  for (const Json& t : totals) {
    const std::string w = where + ".comm.totals[]";
    if (need_string(t, "axis", w) != "dp" || need_string(t, "impl", w) != "ring") continue;
    const std::string op = need_string(t, "op", w);
    for (RingOp o : {RingOp::reduce_scatter, RingOp::all_gather, RingOp::all_reduce})
      if (op == ring_op_name(o)) {
        LinkBytes b;
        b.intra = need_u64(t, "sent_intra", w);
        b.inter = need_u64(t, "sent_inter", w);
        m.by_op(o) += b;
      }
  }
  return m;
}

bool times_equals(u64 per_step, u64 steps, u64 measured) { return u128(per_step) * steps == u128(measured); }

// Sums comm.totals entries of ring collectives on axis "tp" by purpose.
TpStepBytes measured_tp_ring(const Json& rank, const std::string& where) {
  const Json& totals = need(need(rank, "comm", where), "totals", where + ".comm");
  TpStepBytes m;
  for (const Json& t : totals) {
    const std::string w = where + ".comm.totals[]";
    if (need_string(t, "axis", w) != "tp" || need_string(t, "impl", w) != "ring") continue;
    const std::string op = need_string(t, "op", w);
    if (op != "reduce_scatter" && op != "all_gather" && op != "all_reduce") continue;
    const std::string purpose = t.contains("purpose") ? need_string(t, "purpose", w) : "";
    const u64 sent = need_u64(t, "sent_intra", w) + need_u64(t, "sent_inter", w);
    (purpose == "regather" ? m.regather : purpose == "replicated_grads" ? m.replicated_grads : m.region) += sent;
  }
  return m;
}

ActivationShape read_activation_shape(const Json& a) {
  const std::string w = "model.activations";
  ActivationShape s;
  s.seq = need_u64(a, "seq", w);
  s.micro_batch = need_u64(a, "micro_batch", w);
  s.hidden = need_u64(a, "hidden", w);
  s.heads = need_u64(a, "heads", w);
  s.layers = need_u64(a, "layers", w);
  s.vocab = need_u64(a, "vocab", w);
  s.width = need_u64(a, "width", w);
  s.stat_width = need_u64(a, "stat_width", w);
  if (!parse_attention_kernel(need_string(a, "attention", w), &s.attention))
    throw std::runtime_error("unknown model.activations.attention");
  if (!parse_recompute(need_string(a, "recompute", w), &s.recompute))
    throw std::runtime_error("unknown model.activations.recompute");
  if (a.contains("tp")) s.tp = need_u64(a, "tp", w);
  if (a.contains("sequence_parallel")) {
    if (!a.at("sequence_parallel").is_boolean())
      throw std::runtime_error(w + ".sequence_parallel must be true or false");
    s.sequence_parallel = a.at("sequence_parallel").get<bool>();
  }
  if (s.tp < 1 || s.heads % s.tp != 0 || (s.sequence_parallel && s.seq % s.tp != 0))
    throw std::runtime_error(w + ": tp " + std::to_string(s.tp) + " does not split these heads and sequence");
  return s;
}

// Every saved tensor of one rank against the itemised formula, and the activation peak.
void check_activations(const Json& rank, const LedgerCheck& c, u64 micro_batches, RankCheck* rc) {
  const ActivationShape& s = c.activation_shape;
  const u64 L = s.layers, twice = s.recompute == Recompute::full ? 2 : 1;
  std::map<std::string, std::pair<u64, u64>> formula;  // item → bytes each, allocations
  for (const ActivationItem& i : block_items(s))
    formula[i.name] = {i.bytes, L * micro_batches * (i.name == "block.x" ? 1 : twice)};
  for (const ActivationItem& i : head_items(s)) formula[i.name] = {i.bytes, micro_batches};
  const Json& memory = need(rank, "memory", "rank " + std::to_string(rc->rank));
  const Json items = memory.contains("items") ? memory.at("items") : Json::object();
  std::map<std::string, std::pair<u64, u64>> measured;
  for (const auto& [name, it] : items.items()) {
    if (name.rfind("block.", 0) != 0 && name.rfind("head.", 0) != 0) continue;  // activations only
    const std::string where = "memory.items." + name;
    measured[name] = {it.contains("bytes_each") ? need_u64(it, "bytes_each", where) : ~u64(0),
                      need_u64(it, "allocations", where)};
  }
  std::vector<std::string> names;  // the formula's order (the model's), then anything the formula lacks
  for (const ActivationItem& i : block_items(s)) names.push_back(i.name);
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
    rc->activations.push_back(r);
  }
  rc->peak_formula = activation_peak(s, L, true);
  rc->peak_measured = need_u64(need(memory, "activation", "memory"), "peak", "memory.activation");
}

void read_layout(const Json& j, LedgerCheck* c) {
  const Json& l = need(j, "layout", "the ledger");
  c->sharded = true;
  c->layout.dp = need_u64(l, "dp", "layout");
  c->layout.strategy = need_word<Strategy>(l, "strategy", "layout", parse_strategy);
  if (l.contains("tp")) c->tp = need_u64(l, "tp", "layout");
  if (l.contains("sequence_parallel")) {
    if (!l.at("sequence_parallel").is_boolean()) throw std::runtime_error("layout.sequence_parallel must be a boolean");
    c->sequence_parallel = l.at("sequence_parallel").get<bool>();
  }
  if (c->tp < 1 || c->tp > (1u << 20)) throw std::runtime_error("layout.tp must be in [1, 1048576]");
  if (l.contains("ranks_per_node")) c->world_ranks_per_node = need_u64(l, "ranks_per_node", "layout");
  if (c->world_ranks_per_node % c->tp != 0)
    throw std::runtime_error("layout.ranks_per_node is not a multiple of layout.tp (tp partners share a node)");
  c->layout.ranks_per_node = c->world_ranks_per_node / c->tp;  // dp ranks per node
  c->layout.accum = need_u64(l, "accum", "layout");
  c->steps = need_u64(l, "steps", "layout");
  c->comm_impl = need_string(l, "comm", "layout");
  if (c->comm_impl != "ring" && c->comm_impl != "mpi")
    throw std::runtime_error("unknown layout.comm \"" + c->comm_impl + "\" (ring or mpi)");
  const std::string bad = layout_error(c->layout);
  if (!bad.empty()) throw std::runtime_error("layout: " + bad);
  if (static_cast<u64>(c->world_size) != c->layout.dp * c->tp)
    throw std::runtime_error("world_size " + std::to_string(c->world_size) +
                             " is not layout.dp × layout.tp = " + std::to_string(c->layout.dp * c->tp));
  c->sharding = shard_layout(c->layout, c->psi);
  c->comm_checked = c->comm_impl == "ring";
  c->tp_checked = c->comm_checked && c->tp > 1;
  const std::pair<const char*, u64> derived[] = {{"shard_group", static_cast<u64>(c->sharding.group)},
                                                 {"padded_params", c->sharding.padded()},
                                                 {"shard", c->sharding.shard()}};
  for (const auto& [field, formula] : derived)
    if (l.contains(field)) {
      LayoutRow row{field, formula, need_u64(l, field, "layout"), false};
      row.match = row.measured == row.formula;
      c->layout_rows.push_back(row);
    }
}
}  // namespace

bool RankCheck::activations_match() const {
  if (peak_formula != peak_measured) return false;
  return std::all_of(activations.begin(), activations.end(), [](const ActivationRow& r) { return r.match; });
}

bool LedgerCheck::ok() const {
  for (const LayoutRow& r : layout_rows)
    if (!r.match) return false;
  for (const RankCheck& r : ranks) {
    if (!std::all_of(r.states.begin(), r.states.end(), [](const LedgerRow& s) { return s.match; })) return false;
    if (comm_checked && !r.comm.match) return false;
    if (tp_checked && !r.tp.match) return false;
    if (activations_checked && !r.activations_match()) return false;
  }
  return !ranks.empty();
}

LedgerCheck check_ledger_text(const std::string& json_text) {
  Json j;
  try {
    j = Json::parse(json_text);
  } catch (const Json::parse_error& e) {
    throw std::runtime_error(std::string("not valid JSON: ") + e.what());
  }
  LedgerCheck c;
  const Json& model = need(j, "model", "the ledger");
  c.psi = need_u64(model, "params", "model");
  c.recipe = read_recipe(model);
  if (model.contains("activations")) {
    c.activations_checked = true;
    c.activation_shape = read_activation_shape(model.at("activations"));
  }
  if (j.contains("world_size")) c.world_size = static_cast<int>(need_u64(j, "world_size", "the ledger"));
  const Json& ranks = need(j, "ranks", "the ledger");
  if (!ranks.is_array()) throw std::runtime_error("\"ranks\" must be an array");
  if (j.contains("layout")) read_layout(j, &c);
  if (c.activations_checked &&
      (c.activation_shape.tp != c.tp || c.activation_shape.sequence_parallel != c.sequence_parallel))
    throw std::runtime_error("model.activations and layout disagree on tp / sequence_parallel");
  if (c.activations_checked && c.tp > 1) {  // Ψ_t from the dims (claim C19), against what the ranks hold
    const ActivationShape& a = c.activation_shape;
    const u64 formula = tp_param_count(GptDims{a.vocab, a.seq, a.hidden, a.layers}, c.tp);
    c.layout_rows.push_back({"params (Ψ_t)", formula, c.psi, formula == c.psi});
  }

  // Without a layout only rank 0 is checked, against the unsharded formula (claims C1, C3, C11).
  const u64 checked = c.sharded ? c.layout.dp * c.tp : 1;
  std::vector<const Json*> by_rank(checked, nullptr);
  for (const Json& r : ranks) {
    if (!r.is_object() || !r.contains("rank") || !r.at("rank").is_number_unsigned()) continue;
    const u64 k = r.at("rank").get<u64>();
    if (k >= checked) continue;
    if (by_rank[k]) throw std::runtime_error("rank " + std::to_string(k) + " appears twice in \"ranks\"");
    by_rank[k] = &r;
  }
  const PerCategory states =
      c.sharded ? per_rank_model_state_bytes(c.recipe, c.psi, c.layout) : model_state_bytes(c.recipe, c.psi);
  for (u64 k = 0; k < checked; ++k) {
    const std::string where = "rank " + std::to_string(k);
    if (!by_rank[k]) throw std::runtime_error("no entry with \"rank\": " + std::to_string(k) + " in \"ranks\"");
    RankCheck rc;
    rc.rank = static_cast<int>(k);
    rc.dp_rank = static_cast<int>(k / c.tp);
    rc.tp_rank = static_cast<int>(k % c.tp);
    rc.states = check_states(*by_rank[k], states, where);
    if (c.activations_checked)  // claims C4-C6, C27, C28: every saved tensor, exactly
      check_activations(*by_rank[k], c, need_u64(model.at("activations"), "micro_batches", "model.activations"), &rc);
    if (c.comm_checked) {  // claims C8, C12, C14: ring bytes per step, exactly
      CommRow& m = rc.comm;
      m.formula = step_comm_bytes(c.recipe, c.psi, c.layout, k / c.tp);
      m.measured = measured_dp_ring(*by_rank[k], where);
      m.steps = c.steps;
      m.split = c.layout.ranks_per_node > 0;
      const LinkBytes f = m.formula.total(), got = m.measured.total();
      m.match = m.split ? times_equals(f.intra, c.steps, got.intra) && times_equals(f.inter, c.steps, got.inter)
                        : times_equals(f.total(), c.steps, got.total());
    }
    if (c.tp_checked) {  // claims C17, C23: the tp bytes per step, exactly
      if (!c.activations_checked) throw std::runtime_error("a tp ledger without model.activations cannot be checked");
      const ActivationShape& a = c.activation_shape;
      TpShape t;
      t.gpt = GptDims{a.vocab, a.seq, a.hidden, a.layers};
      t.micro_batch = a.micro_batch;
      t.accum = c.layout.accum;
      t.tp = c.tp;
      t.sequence_parallel = c.sequence_parallel;
      t.recompute = a.recompute;
      t.act_bytes = c.recipe.mixed == Mixed::none && c.recipe.dtype == Dtype::f64 ? 8 : 4;
      t.grad_bytes = bytes_per_param(c.recipe)[Mem::grad];
      const ShardLayout& g = c.sharding;
      const bool whole = c.layout.strategy == Strategy::dp;
      const u64 member = c.layout.strategy == Strategy::hybrid ? rc.dp_rank % g.group : rc.dp_rank;
      const u64 lo = whole ? 0 : member * g.shard(), hi = whole ? g.padded() : lo + g.shard();
      rc.tp.phases = tp_step_phases(t, rc.tp_rank, lo, hi);
      rc.tp.formula = tp_step_bytes(rc.tp.phases);
      rc.tp.measured = measured_tp_ring(*by_rank[k], where);
      rc.tp.match = times_equals(rc.tp.formula.region, c.steps, rc.tp.measured.region) &&
                    times_equals(rc.tp.formula.regather, c.steps, rc.tp.measured.regather) &&
                    times_equals(rc.tp.formula.replicated_grads, c.steps, rc.tp.measured.replicated_grads);
    }
    c.ranks.push_back(rc);
  }
  return c;
}

}  // namespace shardlab::plan
