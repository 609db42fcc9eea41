// check/ledger_check.cpp — reads a trainer ledger.json and compares it with the formulas.
// See ledger_check.h for what is checked and what is left out.
#include "check/ledger_check.h"

#include <algorithm>
#include <limits>
#include <map>
#include <stdexcept>
#include <tuple>

#include <nlohmann/json.hpp>

#include "check/activation_check.h"
#include "check/ledger_read.h"
#include "check/moe_rank_check.h"
#include "check/pipeline_section_check.h"
#include "comm/grid_coords.h"
#include "parallel/schedule.h"
#include "plan/pipeline_stages.h"

namespace shardlab::plan {

namespace {
using u64 = std::uint64_t;
using u128 = unsigned __int128;

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

bool times_equals(u64 per_step, u64 steps, u64 measured) { return u128(per_step) * steps == u128(measured); }
}  // namespace

void read_layout(const Json& j, LedgerCheck* c) {
  const Json& l = need(j, "layout", "the ledger");
  c->sharded = true;
  c->grid_dp = need_in(l, "dp", "layout", 1, 1u << 20);
  c->layout.strategy = need_word<Strategy>(l, "strategy", "layout", parse_strategy);
  if (l.contains("tp")) c->tp = need_in(l, "tp", "layout", 1, 1u << 20);
  if (l.contains("sequence_parallel")) {
    if (!l.at("sequence_parallel").is_boolean()) throw std::runtime_error("layout.sequence_parallel must be a boolean");
    c->sequence_parallel = l.at("sequence_parallel").get<bool>();
  }
  if (l.contains("cp")) c->cp = need_in(l, "cp", "layout", 1, 1u << 20);
  if (l.contains("exact")) {
    if (!l.at("exact").is_boolean()) throw std::runtime_error("layout.exact must be a boolean");
    c->layout.exact = l.at("exact").get<bool>();
  }
  if (l.contains("ep")) c->ep = need_in(l, "ep", "layout", 1, 1u << 20);
  if (l.contains("bucket_mb")) {
    if (!l.at("bucket_mb").is_number() || !(l.at("bucket_mb").get<double>() > 0))
      throw std::runtime_error("layout.bucket_mb must be a positive number");
    c->bucket_mb = l.at("bucket_mb").get<double>();
  } else if (c->ep > 1) {
    throw std::runtime_error("layout.ep " + std::to_string(c->ep) +
                             " without layout.bucket_mb (where the gradient "
                             "all-reduces cut)");
  }
  if (l.contains("cp_split")) {
    const std::string word = need_string(l, "cp_split", "layout");
    if (!read_word(kContextSplitWords, word, &c->cp_split))
      throw std::runtime_error("unknown layout.cp_split \"" + word + "\"");
  }
  c->layout.dp = c->grid_dp * c->cp * c->ep;  // the gradient group: dp × cp × ep (comm/process_grid.h)
  c->layout.cp = c->cp;
  if (l.contains("ranks_per_node")) c->world_ranks_per_node = need_u64(l, "ranks_per_node", "layout");
  if (c->world_ranks_per_node % c->tp != 0)
    throw std::runtime_error("layout.ranks_per_node is not a multiple of layout.tp (tp partners share a node)");
  if (l.contains("pp")) c->pp = static_cast<int>(need_in(l, "pp", "layout", 1, 4096));
  if (l.contains("virtual_stages"))
    c->virtual_stages = static_cast<int>(need_in(l, "virtual_stages", "layout", 1, 4096));
  if (l.contains("pp_layers"))
    if (const std::string why = parse_layer_counts(need_string(l, "pp_layers", "layout"), &c->pp_layers); !why.empty())
      throw std::runtime_error("layout.pp_layers " + why);
  if (l.contains("schedule")) {
    const std::string word = need_string(l, "schedule", "layout");
    if (!parse_schedule(word, &c->schedule)) throw std::runtime_error("unknown layout.schedule \"" + word + "\"");
  }
  // Gradient-group partners (dp × cp) with the same pp and tp coordinates: a node holding whole replicas
  // (K a multiple of tp × pp × cp) holds K/(tp·pp) of them; a smaller node the members of its stage's cp ranks
  // on it, min(K, cp·tp)/tp (1 without cp).
  // With expert parallelism the ring's links are followed rank by rank instead (check/moe_rank_check.h).
  const u64 K = c->ep > 1 ? 0 : c->world_ranks_per_node, replica = c->tp * c->pp * c->cp, ring = c->cp * c->tp;
  if (K && K % replica != 0 && replica % K != 0)
    throw std::runtime_error("layout.ranks_per_node " + std::to_string(K) +
                             " neither holds whole pipeline replicas (tp × pp × cp = " + std::to_string(replica) +
                             ") nor divides one");
  if (K && K < replica && K % ring != 0 && ring % K != 0)
    throw std::runtime_error("layout.ranks_per_node " + std::to_string(K) +
                             " splits a stage's cp × tp = " + std::to_string(ring) + " ranks unevenly over nodes");
  c->layout.ranks_per_node = K == 0 ? 0 : K >= replica ? K / (c->tp * c->pp) : std::min(K, ring) / c->tp;
  c->layout.accum = need_u64(l, "accum", "layout");
  if (c->layout.accum > u64(kMaxPipelineSlots) / (u64(c->pp) * c->virtual_stages))  // what a run can have had
    throw std::runtime_error("layout.accum = " + std::to_string(c->layout.accum) + " micro-batches per step × pp " +
                             std::to_string(c->pp) + " × virtual_stages " + std::to_string(c->virtual_stages) +
                             " is more than the " + std::to_string(kMaxPipelineSlots) + " a run can have");
  c->steps = need_u64(l, "steps", "layout");
  const std::string comm = need_string(l, "comm", "layout");
  if (!read_word(kCommImplWords, comm, &c->comm_impl))
    throw std::runtime_error("unknown layout.comm \"" + comm + "\" (ring or mpi)");
  const std::string bad = layout_error(c->layout);
  if (!bad.empty()) throw std::runtime_error("layout: " + bad);
  const u64 world = c->grid_dp * c->pp * c->cp * c->ep * c->tp;
  if (static_cast<u64>(c->world_size) != world)
    throw std::runtime_error("world_size " + std::to_string(c->world_size) +
                             " is not layout.dp × pp × cp × ep × tp = " + std::to_string(c->grid_dp) + " × " +
                             std::to_string(c->pp) + " × " + std::to_string(c->cp) + " × " + std::to_string(c->ep) +
                             " × " + std::to_string(c->tp) + " = " + std::to_string(world));
  if (c->ep > 1 && c->layout.strategy == Strategy::hybrid)
    throw std::runtime_error("layout.ep " + std::to_string(c->ep) + " with hybrid: no run does that");
  // ZeRO/FSDP with experts shard over the ranks that hold the same parameters, dp × cp (parallel/across_ep.cpp).
  if (c->ep > 1 && c->layout.strategy != Strategy::dp) c->layout.dp = c->grid_dp * c->cp;
  c->sharding = shard_layout(c->layout, c->psi);
  c->comm_checked = c->comm_impl == CommImpl::ring;
  c->tp_checked = c->comm_checked && c->tp > 1;
  c->pp_checked = c->pp > 1;
  c->cp_checked = c->cp > 1;
  c->ep_checked = c->ep > 1;
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
    if (pp_checked && !r.pp.match) return false;
    if (cp_checked && !r.cp.match) return false;
    if (ep_checked && !r.ep.match) return false;
    if (!r.moe_problems.empty()) return false;
    if (r.expert_params_measured >= 0 && std::uint64_t(r.expert_params_measured) != r.expert_params) return false;
    if (r.psi_measured && r.psi_measured != r.psi) return false;
    if (activations_checked && !r.activations_match()) return false;
    if (r.param_peak_checked && r.param_peak_measured > r.param_peak_bound) return false;
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
  if (j.contains("world_size"))
    c.world_size = static_cast<int>(need_in(j, "world_size", "the ledger", 1, std::numeric_limits<int>::max()));
  const Json& ranks = need(j, "ranks", "the ledger");
  if (!ranks.is_array()) throw std::runtime_error("\"ranks\" must be an array");
  if (j.contains("layout")) read_layout(j, &c);
  if (c.activations_checked &&
      (c.activation_shape.tp != c.tp || c.activation_shape.sequence_parallel != c.sequence_parallel ||
       c.activation_shape.cp != c.cp))
    throw std::runtime_error("model.activations and layout disagree on tp / sequence_parallel / cp");
  if (c.cp > 1) {  // the trainer's rules (model/token_positions.h): whole chunks, flash attention
    if (!c.activations_checked) throw std::runtime_error("a context-parallel ledger needs model.activations");
    const u64 chunks = c.cp_split == ContextSplit::zigzag ? 2 * c.cp : c.cp, s = c.activation_shape.seq;
    if (s % chunks != 0 || (c.sequence_parallel && s / c.cp % c.tp != 0))
      throw std::runtime_error("layout: seq " + std::to_string(s) + " does not split into " + std::to_string(chunks) +
                               " equal " + word_of(kContextSplitWords, c.cp_split) + " chunks (and s/c over tp)");
    if (c.activation_shape.attention != AttentionKernel::flash && !c.layout.exact)
      throw std::runtime_error("layout.cp " + std::to_string(c.cp) + " with naive attention: no run does that");
  }
  read_moe_section(j, &c);  // the experts (claim C25), if any
  const bool moe = c.activation_shape.moe.on();
  if (c.activations_checked && (c.tp > 1 || moe) && c.pp == 1) {  // Ψ_t (C19), E/ep experts (C25); stages: below
    const ActivationShape& a = c.activation_shape;
    const u64 formula = tp_param_count(GptDims{a.vocab, a.seq, a.hidden, a.layers, a.moe}, c.tp, c.ep);
    c.layout_rows.push_back({moe ? "params (dense + E/ep experts)" : "params (Ψ_t)", formula, c.psi, formula == c.psi});
  }

  // Without a layout only rank 0 is checked, against the unsharded formula (claims C1, C3, C11).
  const u64 checked = c.sharded ? c.grid_dp * c.pp * c.cp * c.ep * c.tp : 1;
  if (c.pp > 1 && !c.activations_checked) throw std::runtime_error("a pipeline ledger needs model.activations");
  if (c.pp > 1)
    if (const std::string why = pipeline_problem(static_cast<int>(c.activation_shape.layers), c.pp, c.virtual_stages,
                                                 c.schedule, c.pp_layers);
        !why.empty())
      throw std::runtime_error("layout: " + why);
  if (c.pp > 1 || j.contains("pipeline")) check_pipeline_section(j, c.pp, c.schedule, c.layout.accum, c.virtual_stages);
  std::vector<const Json*> by_rank(checked, nullptr);
  for (const Json& r : ranks) {
    if (!r.is_object() || !r.contains("rank") || !r.at("rank").is_number_unsigned()) continue;
    const u64 k = r.at("rank").get<u64>();
    if (k >= checked) continue;
    if (by_rank[k]) throw std::runtime_error("rank " + std::to_string(k) + " appears twice in \"ranks\"");
    by_rank[k] = &r;
  }
  for (u64 k = 0; k < checked; ++k) {
    const std::string where = "rank " + std::to_string(k);
    if (!by_rank[k]) throw std::runtime_error("no entry with \"rank\": " + std::to_string(k) + " in \"ranks\"");
    RankCheck rc;
    rc.rank = static_cast<int>(k);
    const GridCoords at =
        coords_of_rank(GridSizes{int(c.grid_dp), int(c.tp), c.pp, int(c.cp), int(c.ep)}, static_cast<int>(k));
    rc.tp_rank = at.tp;
    rc.pp_rank = at.pp;
    rc.cp_rank = at.cp;
    rc.ep_rank = at.ep;
    rc.dp_rank = at.dp;
    rc.grad_member = u64(at.dp) * c.cp + u64(at.cp);  // its place in the gradient group (ZeRO/FSDP with ep: dp × cp)
    if (c.layout.strategy == Strategy::dp) rc.grad_member = rc.grad_member * c.ep + u64(at.ep);
    // The parameters this rank holds: its stage's units, its tp slice of them (claims C19, C26).
    rc.psi = c.psi;
    std::vector<bool> held;
    if (c.pp > 1) {
      rc.psi = stage_param_count(stage_shape(c), rc.pp_rank);
      held = stage_partition(stage_shape(c)).held_units(rc.pp_rank);
    }
    if (by_rank[k]->contains("params")) rc.psi_measured = need_u64(*by_rank[k], "params", where);
    const ShardLayout sharding = c.sharded ? shard_layout(c.layout, rc.psi) : ShardLayout();
    const PerCategory states =
        c.sharded ? per_rank_model_state_bytes(c.recipe, rc.psi, c.layout) : model_state_bytes(c.recipe, rc.psi);
    rc.states = check_states(*by_rank[k], states, where);
    if (c.sharded && c.activations_checked && is_sharded(c.layout.strategy, Mem::param)) {
      const u64 psi_bytes = bytes_per_param(c.recipe).v[static_cast<int>(Mem::param)];
      const u64 unit = largest_unit_param_count(stage_shape(c), c.pp > 1 ? rc.pp_rank : 0) + sharding.group;
      rc.param_peak_checked = true;
      rc.param_peak_bound = states.v[static_cast<int>(Mem::param)] + 2 * unit * psi_bytes;
      rc.param_peak_measured = need_u64(need(need(*by_rank[k], "memory", where), "param", where + " memory"), "peak",
                                        where + " memory.param");
    }
    if (moe) {  // claim C25: the experts, their rows, activations and all-to-alls (and the dp rings under ep)
      check_moe_rank(*by_rank[k], c, held, &rc);
    } else if (c.activations_checked) {  // claims C4-C6, C27, C28: every saved tensor, exactly
      const ActivationShape& a = c.activation_shape;
      const StageFacts st =
          c.pp > 1 ? stage_facts(c, rc.pp_rank) : StageFacts{a.layers, true, activation_peak(a, a.layers, true)};
      check_activations(*by_rank[k], c, need_u64(model.at("activations"), "micro_batches", "model.activations"), st,
                        &rc);
    }
    if (c.pp_checked) {  // claim C22: point to point, b·s·h·e per micro-batch per border
      const u64 e = u64(c.recipe.compute_bytes());
      rc.pp.formula =
          stage_p2p_sent_bytes(stage_shape(c), rc.pp_rank, c.activation_shape.micro_batch, c.layout.accum, e);
      rc.pp.measured = measured_pp_sent(*by_rank[k], where);
      rc.pp.match = times_equals(rc.pp.formula, c.steps, rc.pp.measured);
    }
    if (c.comm_checked && !c.ep_checked) {  // claims C8, C12, C14: ring bytes per step, exactly
      CommRow& m = rc.comm;
      m.formula = step_comm_bytes(c.recipe, rc.psi, c.layout, static_cast<int>(rc.grad_member));
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
      t.gpt = GptDims{a.vocab, a.seq, a.hidden, a.layers, a.moe};
      t.micro_batch = a.micro_batch;
      t.accum = c.layout.accum;
      t.tp = c.tp;
      t.sequence_parallel = c.sequence_parallel;
      t.recompute = a.recompute;
      t.act_bytes = u64(c.recipe.compute_bytes());
      t.grad_bytes = bytes_per_param(c.recipe)[Mem::grad];
      t.held = held;
      t.cp = c.cp;
      t.exact = c.layout.exact;
      const ShardLayout& g = sharding;
      const bool whole = c.layout.strategy == Strategy::dp || c.layout.exact;  // exact: merged before the dp sums
      const u64 member = c.layout.strategy == Strategy::hybrid ? rc.grad_member % g.group : rc.grad_member;
      const u64 lo = whole ? 0 : member * g.shard(), hi = whole ? g.padded() : lo + g.shard();
      rc.tp.phases = tp_step_phases(t, rc.tp_rank, lo, hi);
      rc.tp.formula = tp_step_bytes(rc.tp.phases);
      rc.tp.measured = measured_tp_ring(*by_rank[k], where);
      rc.tp.match = times_equals(rc.tp.formula.region, c.steps, rc.tp.measured.region) &&
                    times_equals(rc.tp.formula.regather, c.steps, rc.tp.measured.regather) &&
                    times_equals(rc.tp.formula.replicated_grads, c.steps, rc.tp.measured.replicated_grads) &&
                    times_equals(rc.tp.formula.vocab, c.steps, rc.tp.measured.vocab);
    }
    if (c.cp_checked) {  // claim C24: ring attention's messages, exactly
      const ActivationShape& a = c.activation_shape;
      CpShape cs;
      cs.seq = a.seq;
      cs.micro_batch = a.micro_batch;
      cs.hidden = a.hidden;
      cs.heads = a.heads;
      cs.tp = c.tp;
      cs.cp = c.cp;
      cs.blocks = c.pp > 1 ? u64(stage_blocks(stage_shape(c), rc.pp_rank)) : a.layers;
      cs.accum = c.layout.accum;
      cs.recompute = a.recompute;
      cs.elem_bytes = u64(c.recipe.compute_bytes());
      cs.exact = c.layout.exact;
      cs.head = c.pp > 1 ? stage_facts(c, rc.pp_rank).head : true;
      rc.cp = check_cp_rank(*by_rank[k], cs, c.steps, where);
    }
    c.ranks.push_back(rc);
  }
  return c;
}

}  // namespace shardlab::plan
