// check/ledger_report.cpp — the measured-versus-formula tables of `plan --ledger` (see ledger_report.h).
#include "check/ledger_report.h"

#include <ostream>

#include "check/moe_report.h"
#include "core/error_line.h"
#include "core/paths.h"
#include "report/format.h"

namespace shardlab::plan {

namespace {
using u64 = std::uint64_t;

std::string signed_diff(u64 measured, u64 formula) {
  if (measured == formula) return "0";
  return (measured > formula ? "+" : "-") + commas(measured > formula ? measured - formula : formula - measured);
}

// Measured bytes over the run, per step: an integer when it divides, else two decimals.
std::string per_step(u64 measured, u64 steps) {
  if (steps == 0) return commas(measured) + " (0 steps)";
  if (measured % steps == 0) return commas(measured / steps);
  return fixed(static_cast<long double>(measured) / steps, 2);
}

// The single-process table, as lesson 02 reads it: categories as rows, rank 0 only.
void print_unsharded(std::ostream& out, const LedgerCheck& c) {
  out << "Model states: formula (claims C1, C3) vs rank 0's current bytes\n";
  Table t({"category", "formula bytes", "measured bytes", "match"});
  u64 ft = 0, mt = 0;
  for (const LedgerRow& r : c.ranks.at(0).states) {
    t.row(
        {mem_name(r.category), commas(r.formula), r.present ? commas(r.measured) : "(absent)", r.match ? "yes" : "NO"});
    ft += r.formula;
    mt += r.measured;
  }
  t.rule();
  t.row({"total", commas(ft), commas(mt), ft == mt ? "yes" : "NO"});
  t.print(out);
  if (c.world_size > 1)
    out << "  note: no \"layout\" in the ledger, so this is the unsharded per-rank total of rank 0 (plain DP\n"
           "  replicates it, claim C11); sharded runs are checked rank by rank when the layout is recorded.\n";
}

void print_layout(std::ostream& out, const LedgerCheck& c) {
  const Layout& l = c.layout;
  const std::string nodes =
      l.ranks_per_node ? std::to_string(c.world_ranks_per_node) + " ranks per node" : "nodes not recorded";
  if (c.tp > 1)
    out << "  tensor parallel: t = " << c.tp << (c.sequence_parallel ? " with sequence parallelism" : "")
        << "; every rank holds Ψ_t = " << commas(c.psi) << " parameters; the data-parallel formulas below run over\n"
        << "  the dp group of ranks with the same tp index (world rank = dp·t + tp)\n";
  if (c.cp > 1)
    out << "  context parallel: c = " << c.cp << " (" << word_of(kContextSplitWords, c.cp_split)
        << " split), each rank holds s/c of every sample's tokens;\n"
        << "  the data-parallel formulas below run over the gradient group dp × cp = " << c.grid_dp << " × " << c.cp
        << " (member dp·c + cp)\n";
  out << "  layout: " << strategy_label(l.strategy) << " over N = " << l.dp << " rank" << (l.dp == 1 ? "" : "s")
      << ", shard group G = " << c.sharding.group << ", S = " << commas(c.sharding.shard())
      << ", Ψ_pad = " << commas(c.sharding.padded()) << "\n          " << nodes << ", A = " << l.accum << " micro-batch"
      << (l.accum == 1 ? "" : "es") << " per step, " << c.steps << " step" << (c.steps == 1 ? "" : "s") << ", comm "
      << comm_impl_name(c.comm_impl) << "\n";
  if (c.layout_rows.empty()) return;
  Table t({"layout field", "formula", "ledger", "match"});
  for (const LayoutRow& r : c.layout_rows)
    t.row({r.field, commas(r.formula), commas(r.measured), r.match ? "yes" : "NO"});
  t.print(out);
}

// One row per rank: a column per category, the total, and a match flag; "!" marks a wrong cell.
void print_states(std::ostream& out, const LedgerCheck& c) {
  out << "Model states per rank (claims C12, C14): formula vs each rank's current bytes; ! = differs\n";
  std::vector<std::string> header = {"rank"};
  for (int i = 0; i < kNumCategories; ++i) header.push_back(mem_name(category_at(i)));
  header.push_back("total");
  header.push_back("match");
  Table t(header);
  std::vector<std::string> f = {"formula"};
  u64 ft = 0;
  for (const LedgerRow& r : c.ranks.at(0).states) {
    f.push_back(commas(r.formula));
    ft += r.formula;
  }
  f.push_back(commas(ft));
  t.row(f);
  t.rule();
  for (const RankCheck& rc : c.ranks) {
    std::vector<std::string> cells = {std::to_string(rc.rank)};
    u64 mt = 0, own = 0;  // measured; this rank's formula (a pipeline's stages differ)
    bool all = true;
    for (const LedgerRow& r : rc.states) {
      cells.push_back((r.present ? commas(r.measured) : "-") + (r.match ? "" : " !"));
      mt += r.measured;
      own += r.formula;
      all = all && r.match;
    }
    cells.push_back(commas(mt) + (mt == own ? "" : " !"));
    cells.push_back(all ? "yes" : "NO");
    t.row(cells);
  }
  t.print(out);
  out << "  - = absent from the ledger (counts as 0)"
      << (c.pp > 1 ? "; the formula row is rank 0's stage: every rank is checked against its own stage (below)" : "")
      << "\n";
  bool any = false;
  for (const RankCheck& r : c.ranks) any = any || r.param_peak_checked;
  if (!any) return;
  out << "Parameter peak per rank (sharded parameters: the shard plus at most two gathered units, C15)\n";
  for (const RankCheck& r : c.ranks)
    if (r.param_peak_checked)
      out << "  rank " << r.rank << ": peak " << commas(r.param_peak_measured) << " B, bound "
          << commas(r.param_peak_bound) << " B  " << (r.param_peak_measured <= r.param_peak_bound ? "yes" : "NO")
          << "\n";
}

// Pipeline stages (claims C22, C26): each rank's parameters and point-to-point bytes against its stage.
void print_pp(std::ostream& out, const LedgerCheck& c) {
  if (c.pp <= 1) return;
  out << "\nPipeline over p = " << c.pp << " stages (" << schedule_name(c.schedule)
      << (c.virtual_stages > 1 ? ", " + std::to_string(c.virtual_stages) + " chunks per stage" : "")
      << "): each rank's stage, parameters and point-to-point bytes sent per step on axis pp (claims C22, C26)\n";
  Table t({"rank", "dp", "pp", "tp", "Ψ formula", "Ψ ledger", "p2p formula", "measured", "match"});
  for (const RankCheck& rc : c.ranks)
    t.row({std::to_string(rc.rank), std::to_string(rc.dp_rank), std::to_string(rc.pp_rank), std::to_string(rc.tp_rank),
           commas(rc.psi), rc.psi_measured ? commas(rc.psi_measured) : "-", commas(rc.pp.formula),
           per_step(rc.pp.measured, c.steps),
           rc.pp.match && (!rc.psi_measured || rc.psi_measured == rc.psi) ? "yes" : "NO"});
  t.print(out);
  out << "  point to point: b·s·h·e per micro-batch across each border, activations forward and gradients backward;\n"
         "  no collectives on pp\n";
}

// Ring attention (claim C24): each rank's messages on axis cp, sent and received, and the ring's buffers.
void print_cp(std::ostream& out, const LedgerCheck& c) {
  if (!c.cp_checked) return;
  const CpRow& r0 = c.ranks.at(0).cp;
  if (c.layout.exact) {  // no ring: whole samples inside the regions (plan/exact_cp_bytes.h)
    out << "\nThe exact mode's cp over c = " << c.cp << " (" << word_of(kContextSplitWords, c.cp_split)
        << " split; plan/exact_cp_bytes.h): all-to-alls on axis cp, purpose exact_rows, no ring\n"
        << "per step, formula vs comm.totals / " << c.steps
        << " steps; one all-to-all sends (c−1)·(b/c)·(s/c)·h·e = " << commas(r0.message_bytes)
        << " B; 10 per block and micro-batch (+4 with full recompute), 3 for the head\n";
    Table t({"rank", "dp", "pp", "cp", "tp", "all-to-alls", "measured", "bytes formula", "sent", "received",
             "comm_buffer formula", "measured", "match"});
    for (const RankCheck& rc : c.ranks) {
      const CpRow& r = rc.cp;
      t.row({std::to_string(rc.rank), std::to_string(rc.dp_rank), std::to_string(rc.pp_rank),
             std::to_string(rc.cp_rank), std::to_string(rc.tp_rank), commas(r.formula.messages),
             per_step(r.sends, c.steps), commas(r.formula.total()), per_step(r.sent, c.steps),
             per_step(r.received, c.steps), commas(r.buffer_formula), commas(r.buffer_measured),
             r.match ? "yes" : "NO"});
    }
    t.print(out);
    for (const std::string& bad : r0.bad_records) out << "  rank 0: " << bad << "\n";
    return;
  }
  out << "\nRing attention over c = " << c.cp << " (" << word_of(kContextSplitWords, c.cp_split)
      << " split; claim C24; plan/cp_bytes.h): point-to-point messages on axis cp\n"
      << "per step, formula vs comm.totals / " << c.steps
      << " steps; one message = K and V of a rank's tokens, 2·b·(s/c)·(h/t) = " << commas(r0.message_elements)
      << " elements = " << commas(r0.message_bytes) << " B\n"
      << "  per layer and micro-batch: forward c−1 = " << c.cp - 1 << ", backward 2c−1 = " << 2 * c.cp - 1
      << (c.activation_shape.recompute == Recompute::full ? ", recomputed forward c−1 = " + std::to_string(c.cp - 1)
                                                          : std::string())
      << " messages\n";
  Table t({"rank", "dp", "pp", "cp", "tp", "messages", "sent", "received", "bytes formula", "sent", "received",
           "comm_buffer formula", "measured", "match"});
  for (const RankCheck& rc : c.ranks) {
    const CpRow& r = rc.cp;
    t.row({std::to_string(rc.rank), std::to_string(rc.dp_rank), std::to_string(rc.pp_rank), std::to_string(rc.cp_rank),
           std::to_string(rc.tp_rank), commas(r.formula.messages), per_step(r.sends, c.steps),
           per_step(r.receives, c.steps), commas(r.formula.total()), per_step(r.sent, c.steps),
           per_step(r.received, c.steps), commas(r.buffer_formula), commas(r.buffer_measured), r.match ? "yes" : "NO"});
  }
  t.print(out);
  out << "  rank 0 per step: forward " << commas(r0.formula.forward) << " B"
      << (r0.formula.recompute ? ", recomputed forward " + commas(r0.formula.recompute) + " B" : std::string())
      << ", backward " << commas(r0.formula.backward) << " B (× L = " << r0.blocks << " layers × A = " << c.layout.accum
      << " micro-batches);\n  comm_buffer: 5 messages (two K/V, three dK/dV); workspace "
      << commas(r0.workspace_measured) << " B ≥ the ring's running sum and scratch, " << commas(r0.workspace_floor)
      << " B\n";
}

void print_comm(std::ostream& out, const LedgerCheck& c) {
  if (!c.comm_checked) {
    out << "Ring traffic: not checked — comm \"mpi\" uses MPI's built-in collectives, whose internal bytes\n"
           "are not observable (the ledger records payloads only); rerun with ring collectives to check them.\n";
    return;
  }
  const bool split = c.layout.ranks_per_node > 0;
  out << "Bytes sent per step on axis dp, ring reduce_scatter + all_gather + all_reduce (claims C8, C12, C14):\n";
  if (c.ep_checked && c.layout.strategy != Strategy::dp)
    out << "  (" << strategy_label(c.layout.strategy) << " with experts: the rings over dp × cp = " << c.layout.dp
        << ", plus the all-reduce over ep of each rank's shard of the dense gradients, purpose dense_grads)\n";
  out << "formula vs comm.totals / " << c.steps << " steps"
      << (split ? "" : " (no ranks_per_node: intra + inter compared as one sum)") << "\n";
  Table t({"rank", "formula intra", "formula inter", "measured intra", "measured inter", "match"});
  for (const RankCheck& rc : c.ranks) {
    const LinkBytes f = rc.comm.formula.total(), m = rc.comm.measured.total();
    t.row({std::to_string(rc.rank), commas(f.intra), commas(f.inter), per_step(m.intra, c.steps),
           per_step(m.inter, c.steps), rc.comm.match ? "yes" : "NO"});
  }
  t.print(out);
  for (const RankCheck& rc : c.ranks) {
    if (rc.comm.match) continue;
    out << "  rank " << rc.rank << " by op, per step (formula / measured):";
    for (RingOp o : {RingOp::reduce_scatter, RingOp::all_gather, RingOp::all_reduce})
      out << (o == RingOp::reduce_scatter ? " " : ", ") << ring_op_name(o) << " "
          << commas(rc.comm.formula.by_op(o).total()) << " / " << per_step(rc.comm.measured.by_op(o).total(), c.steps);
    out << "\n";
  }
}

// Tensor-parallel traffic per rank and purpose (claims C17, C23), with rank 0's phases spelled out.
void print_tp(std::ostream& out, const LedgerCheck& c) {
  if (c.tp <= 1) return;
  if (!c.tp_checked) {
    out << "Tensor-parallel traffic: not checked (comm \"mpi\": MPI's internal bytes are not observable)\n";
    return;
  }
  out << "\nBytes sent per step on axis tp, tensor parallel over t = " << c.tp
      << (c.sequence_parallel ? " with sequence parallelism" : "") << " (claims C17, C23; plan/tp_bytes.h):\n"
      << "formula vs comm.totals / " << c.steps << " steps, by purpose\n";
  Table t({"rank", "dp", "tp", "regions formula", "measured", "regather formula", "measured", "replicated grads",
           "measured", "vocab formula", "measured", "match"});
  for (const RankCheck& rc : c.ranks) {
    const TpStepBytes& f = rc.tp.formula;
    const TpStepBytes& m = rc.tp.measured;
    t.row({std::to_string(rc.rank), std::to_string(rc.dp_rank), std::to_string(rc.tp_rank), commas(f.region),
           per_step(m.region, c.steps), commas(f.regather), per_step(m.regather, c.steps), commas(f.replicated_grads),
           per_step(m.replicated_grads, c.steps), commas(f.vocab), per_step(m.vocab, c.steps),
           rc.tp.match ? "yes" : "NO"});
  }
  t.print(out);
  out << "  rank 0's tp collectives per step:\n";
  for (const TpPhase& p : c.ranks.at(0).tp.phases)
    out << "  - " << p.times << " × " << ring_op_name(p.op) << " of " << commas(p.payload) << " elements (" << p.what
        << "): sends " << commas(p.elements) << " × " << p.elem_bytes << " B each = " << commas(p.bytes()) << " B\n";
}

// Every saved tensor of rank 0 (the other ranks: only whether they match), and the peak.
void print_activations(std::ostream& out, const LedgerCheck& c) {
  if (!c.activations_checked || c.ranks.empty()) return;
  const ActivationShape& s = c.activation_shape;
  out << "\nActivations per layer and micro-batch, rank 0 (s=" << s.seq << " b=" << s.micro_batch << " h=" << s.hidden
      << " a=" << s.heads << " L=" << s.layers
      << (s.cp > 1 ? " c=" + std::to_string(s.cp) + ": s/c=" + std::to_string(s.positions()) + " tokens" : "")
      << ", w=" << s.width << " B, " << attention_name(s.attention) << " attention, recompute "
      << recompute_name(s.recompute) << "; plan/activation_items.h)\n";
  Table t({"item", "formula B", "measured B", "allocations", "measured", "match"});
  for (const ActivationRow& r : c.ranks[0].activations)
    t.row({r.item, r.in_formula ? commas(r.formula_bytes) : "-", r.in_ledger ? commas(r.measured_bytes) : "-",
           r.in_formula ? commas(r.formula_allocations) : "-", r.in_ledger ? commas(r.measured_allocations) : "-",
           r.match ? "yes" : "NO"});
  t.print(out);
  const RankCheck& r0 = c.ranks[0];
  out << "  activation peak: formula " << commas(r0.peak_formula) << " B, measured " << commas(r0.peak_measured) << " B"
      << (r0.peak_formula == r0.peak_measured ? "" : "  MISMATCH") << "\n";
  int bad = 0;
  for (const RankCheck& rc : c.ranks) bad += !rc.activations_match();
  if (c.ranks.size() > 1)
    out << "  ranks 1.." << c.ranks.size() - 1 << ": "
        << (bad ? std::to_string(bad) + " rank(s) differ" : "the same, every item") << "\n";
}

void print_result(std::ostream& out, const LedgerCheck& c) {
  const std::string moe =
      c.activation_shape.moe.on() ? std::string(", MoE record") + (c.ep_checked ? ", ep all-to-all" : "") : "";
  if (c.ok()) {
    if (!c.sharded)
      out << "result: every category matches exactly\n";
    else if (c.pp_checked)
      out << "result: every rank, category" << moe << ", ring total" << (c.tp_checked ? ", tp total" : "")
          << (c.cp_checked ? ", cp message" : "") << " and pipeline stage matches exactly\n";
    else if (c.cp_checked)
      out << "result: every rank, category" << moe << (c.comm_checked ? ", ring total" : "")
          << (c.tp_checked ? ", tp total" : "") << " and cp message matches exactly"
          << (c.comm_checked ? "" : " (ring bytes not checked: comm mpi)") << "\n";
    else if (c.tp_checked)
      out << "result: every rank, category" << moe << ", ring total and tp total matches exactly\n";
    else if (c.comm_checked)
      out << "result: every rank, category" << moe << " and ring total matches exactly\n";
    else
      out << "result: every rank" << moe << " and category matches exactly (ring bytes not checked: comm mpi)\n";
    return;
  }
  out << "result: MISMATCH in";
  for (const LayoutRow& r : c.layout_rows)
    if (!r.match) out << " layout." << r.field << " (ledger " << signed_diff(r.measured, r.formula) << ")";
  for (const RankCheck& rc : c.ranks) {
    const std::string who = c.sharded ? "rank " + std::to_string(rc.rank) + " " : "";
    for (const LedgerRow& r : rc.states)
      if (!r.match)
        out << " " << who << mem_name(r.category) << " (measured " << signed_diff(r.measured, r.formula) << " B)";
    if (c.activations_checked && !rc.activations_match()) {
      for (const ActivationRow& r : rc.activations)
        if (!r.match && !(r.totals && r.in_formula && r.in_ledger))  // those: moe_mismatches
          out << " " << who << r.item
              << (!r.in_ledger    ? " (missing from the ledger)"
                  : !r.in_formula ? " (not in the formula)"
                                  : " (measured " + signed_diff(r.measured_bytes, r.formula_bytes) + " B, " +
                                        std::to_string(r.measured_allocations) + " allocations for " +
                                        std::to_string(r.formula_allocations) + ")");
      if (rc.peak_formula != rc.peak_measured)
        out << " " << who << "activation peak (measured " << signed_diff(rc.peak_measured, rc.peak_formula) << " B)";
    }
    if (c.tp_checked && !rc.tp.match) {
      const TpStepBytes &f = rc.tp.formula, &m = rc.tp.measured;
      out << " " << who << "tp comm (over the run, measured regions " << signed_diff(m.region, f.region * c.steps)
          << " B, regather " << signed_diff(m.regather, f.regather * c.steps) << " B, replicated grads "
          << signed_diff(m.replicated_grads, f.replicated_grads * c.steps) << " B, vocab "
          << signed_diff(m.vocab, f.vocab * c.steps) << " B)";
    }
    if (c.pp_checked && !rc.pp.match)
      out << " " << who << "pp comm (over the run, measured " << signed_diff(rc.pp.measured, rc.pp.formula * c.steps)
          << " B)";
    if (c.cp_checked && !rc.cp.match) {
      const CpRow& r = rc.cp;
      const u64 bytes = r.formula.total() * c.steps, calls = r.formula.messages * c.steps;
      if (!r.totals_match)
        out << " " << who << "cp comm (over the run, measured sent " << signed_diff(r.sent, bytes) << " B, received "
            << signed_diff(r.received, bytes) << " B, " << r.sends << " sends and " << r.receives << " receives for "
            << calls << ", elements sent " << signed_diff(r.sent_elements, calls * r.message_elements) << ", received "
            << signed_diff(r.received_elements, calls * r.message_elements) << ")";
      if (!r.bad_records.empty())
        out << " " << who << "cp record " << r.bad_records.front()
            << (r.bad_records.size() > 1 ? " and " + std::to_string(r.bad_records.size() - 1) + " more" : "");
      if (r.buffer_measured != r.buffer_formula)
        out << " " << who << "cp comm_buffer (measured " << signed_diff(r.buffer_measured, r.buffer_formula) << " B)";
      if (r.workspace_measured < r.workspace_floor)
        out << " " << who << "workspace (" << commas(r.workspace_measured) << " B, below the ring's "
            << commas(r.workspace_floor) << " B)";
    }
    out << moe_mismatches(c, rc);
    if (rc.psi_measured && rc.psi_measured != rc.psi)
      out << " " << who << "params (ledger " << signed_diff(rc.psi_measured, rc.psi) << ")";
    if (rc.param_peak_checked && rc.param_peak_measured > rc.param_peak_bound)
      out << " " << who << "param peak (" << commas(rc.param_peak_measured) << " B, past the bound of "
          << commas(rc.param_peak_bound) << " B: a gathered unit kept alive too long)";
    if (c.comm_checked && !rc.comm.match) {
      const LinkBytes f = rc.comm.formula.total(), m = rc.comm.measured.total();
      out << " " << who << "comm (over the run, measured ";
      if (rc.comm.split)
        out << "intra " << signed_diff(m.intra, f.intra * c.steps) << " B, inter "
            << signed_diff(m.inter, f.inter * c.steps) << " B)";
      else
        out << signed_diff(m.total(), f.total() * c.steps) << " B)";
    }
  }
  out << "\n";
}
}  // namespace

int print_ledger_check(std::ostream& out, const std::string& path, const LedgerCheck& c) {
  out << "ledger: " << path << "\n"
      << "  Ψ = " << commas(c.psi) << " (model.params); recipe: " << recipe_label(c.recipe) << "; world size "
      << c.world_size << "\n";
  if (!c.sharded) {
    print_unsharded(out, c);
  } else {
    print_layout(out, c);
    print_states(out, c);
    print_comm(out, c);
    print_tp(out, c);
    print_pp(out, c);
    print_cp(out, c);
  }
  if (c.activation_shape.moe.on()) {
    print_moe(out, c);
    print_ep(out, c);
    print_moe_activations(out, c);
  } else {
    print_activations(out, c);
  }
  print_result(out, c);
  return c.ok() ? 0 : 1;
}

int run_ledger(const std::string& path, std::ostream& out, std::ostream& err) {
  LedgerCheck c;
  try {
    c = check_ledger_text(read_file(path, size_t(1) << 30));
  } catch (const std::exception& e) {
    err << "shardlab plan: error: " << shorten_values("--ledger " + path + ": " + e.what()) << "\n";
    return 2;
  }
  return print_ledger_check(out, path, c);
}

}  // namespace shardlab::plan
