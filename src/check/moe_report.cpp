// check/moe_report.cpp — the experts' tables of `plan --ledger` (see moe_report.h).
#include "check/moe_report.h"

#include <ostream>

#include "report/format.h"

namespace shardlab::plan {

namespace {
using u64 = std::uint64_t;

std::string pair(u64 formula, u64 measured) {
  return formula == measured ? commas(formula) : commas(formula) + " / " + commas(measured) + " !";
}

std::string range(u64 lo, u64 hi) { return lo == hi ? commas(lo) : commas(lo) + "…" + commas(hi); }
}  // namespace

void print_moe(std::ostream& out, const LedgerCheck& c) {
  const ActivationShape& s = c.activation_shape;
  const ExpertDims& m = s.moe;
  const u64 slots = moe_routed_slots(s);
  out << "\nExperts (claim C25): E = " << m.experts << " per MoE block, top-" << m.top_k
      << ", width F = " << m.width(s.hidden) << ", MoE blocks l with l % " << m.every << " = 0 (" << m.blocks(s.layers)
      << " of " << s.layers << "), "
      << (c.moe_capacity ? "capacity " + std::to_string(c.moe_capacity) + " slots per expert per sample"
                         : std::string("dropless"))
      << (c.ep > 1 ? ";\n  expert parallel over e = " + std::to_string(c.ep) +
                         ": E/e = " + std::to_string(m.experts / c.ep) + " experts per rank"
                   : std::string())
      << "\n";
  if (c.moe_rows_recorded)
    out << "  rows of each MoE record: taken from the run's routing (ledger ranks[].moe.forwards: n kept slots, m rows "
           "the rank's\n  experts computed, o of its own, per block and forward), since "
        << (c.ep > 1 ? "expert parallelism sends each rank what the others\n  routed to its experts"
                     : "the capacity drops what the routing sends\n  past it")
        << "; s·b·k = " << commas(slots) << " slots per micro-batch routed\n";
  else
    out << "  rows of each MoE record: by the formula, dropless on one process n = m = s·b·k = " << commas(slots)
        << " (the run's recorded rows agree)\n";
  Table t(
      {"rank", "dp", "pp", "ep", "tp", "expert params formula", "ledger", "n per forward", "m per forward", "match"});
  for (const RankCheck& rc : c.ranks)
    t.row({std::to_string(rc.rank), std::to_string(rc.dp_rank), std::to_string(rc.pp_rank), std::to_string(rc.ep_rank),
           std::to_string(rc.tp_rank), commas(rc.expert_params),
           rc.expert_params_measured < 0 ? "-" : commas(u64(rc.expert_params_measured)),
           range(rc.kept_min, rc.kept_max), range(rc.received_min, rc.received_max),
           rc.moe_problems.empty() &&
                   (rc.expert_params_measured < 0 || u64(rc.expert_params_measured) == rc.expert_params)
               ? "yes"
               : "NO"});
  t.print(out);
  out << "  an expert: 2·C·F + F + C = " << commas(expert_param_count(GptDims{s.vocab, s.seq, s.hidden, s.layers, m}))
      << " parameters;\n  a MoE block: attention, the router E·C and E/e experts in place of the MLP's 8C² + 5C\n";
}

void print_moe_activations(std::ostream& out, const LedgerCheck& c) {
  if (!c.activations_checked || c.ranks.empty()) return;
  const ActivationShape& s = c.activation_shape;
  out << "\nActivations over the run, rank 0 (s=" << s.seq << " b=" << s.micro_batch << " h=" << s.hidden
      << " a=" << s.heads << " L=" << s.layers << ", w=" << s.width << " B, w_s=" << s.stat_width << " B, "
      << attention_name(s.attention) << " attention, recompute " << recompute_name(s.recompute)
      << ";\n  plan/activation_items.h, plan/moe_items.h):\n"
      << "  a MoE record's size follows its rows, so each item is compared over the whole run: allocations, the bytes\n"
      << "  they add up to, and the item's own peak; B each where every allocation has the same size\n";
  Table t({"item", "B each", "allocations", "bytes allocated", "measured", "peak", "measured", "match"});
  for (const ActivationRow& r : c.ranks[0].activations)
    t.row({r.item, r.in_formula ? (r.varying ? "varies" : commas(r.formula_bytes)) : "-",
           r.in_ledger && r.in_formula ? pair(r.formula_allocations, r.measured_allocations) : "-",
           r.in_formula ? commas(r.formula_total) : "-", r.in_ledger ? commas(r.measured_total) : "-",
           r.in_formula ? commas(r.formula_peak) : "-", r.in_ledger ? commas(r.measured_peak) : "-",
           r.match ? "yes" : "NO"});
  t.print(out);
  const RankCheck& r0 = c.ranks[0];
  out << "  activation peak (training's schedule with each record its size, and evaluation's forwards):\n  formula "
      << commas(r0.peak_formula) << " B, measured " << commas(r0.peak_measured) << " B"
      << (r0.peak_formula == r0.peak_measured ? "" : "  MISMATCH") << "\n";
  int bad = 0;
  for (const RankCheck& rc : c.ranks) bad += !rc.activations_match();
  if (c.ranks.size() > 1)
    out << "  ranks 1.." << c.ranks.size() - 1 << ": "
        << (bad ? std::to_string(bad) + " rank(s) differ" : "every item and the peak match") << "\n";
}

void print_ep(std::ostream& out, const LedgerCheck& c) {
  if (!c.ep_checked) return;
  const ActivationShape& s = c.activation_shape;
  const u64 w = u64(c.recipe.compute_bytes()), E = s.moe.experts, e = c.ep;
  out << "\nAll-to-alls on axis ep over the run (claim C25; plan/ep_bytes.h), formula from each forward's rows vs "
         "comm.totals;\n"
      << "  counts: E/e = " << E / e << " int32 per member each way; dispatch: sends (n − o)·h·w, receives (m − o)·h·w;"
      << " combine the reverse;\n  h·w = " << s.hidden << "·" << w << " = " << s.hidden * w
      << " B per row;\n  per MoE block and micro-batch: forward counts + dispatch + combine, backward dispatch + "
         "combine"
      << (s.recompute == Recompute::full ? " (after the recomputed forward's three)" : "") << ";\n"
      << "  each call's elements count its own chunk (copied, not sent) both ways; f / m ! = formula / measured "
         "differ\n";
  Table t({"rank", "ep", "purpose", "calls", "elements", "sent B", "received B", "match"}, 3);
  for (const RankCheck& rc : c.ranks)
    for (const EpPurposeRow& p : rc.ep.purposes)
      t.row({std::to_string(rc.rank), std::to_string(rc.ep_rank), p.purpose, pair(p.calls, p.calls_measured),
             pair(p.elements, p.elements_measured), c.comm_checked ? pair(p.sent, p.sent_measured) : "(mpi)",
             c.comm_checked ? pair(p.received, p.received_measured) : "(mpi)", p.match ? "yes" : "NO"});
  t.print(out);
  for (const RankCheck& rc : c.ranks) {
    const EpRow& r = rc.ep;
    out << "  rank " << rc.rank << ": " << r.records_checked << " kept call records checked one by one"
        << (r.bad_records.empty() ? ", all as the formula" : ", " + std::to_string(r.bad_records.size()) + " wrong")
        << ";\n    sent " << commas(r.sent) << " B over the run, " << commas(r.sent_even) << " B at an even load ("
        << (r.sent_even ? fixed(100.0L * r.sent / r.sent_even, 1) + "%" : std::string("-")) << ")\n";
  }
  out << "  even load: every dispatch and combine s·b·k·h·w·(e−1)/e = "
      << commas(ep_even_layer_bytes(s.seq * s.micro_batch, s.moe.top_k, s.hidden, w, E, e).all_to_all)
      << " B;\n  the routing decides the rest (C25: uneven load, ranks wait in the all-to-all)\n"
      << "  gradients: ";
  if (c.layout.strategy == Strategy::dp)
    out << "the dense tensors' all-reduce over dp·e = " << c.grid_dp * e
        << " ranks, the experts' over dp = " << c.grid_dp
        << (c.grid_dp == 1 ? " (none: each expert lives on one rank)" : "")
        << ",\n  range by range (the dp table above)\n";
  else
    out << strategy_label(c.layout.strategy) << " shards every tensor over the ranks that hold it, dp = " << c.grid_dp
        << "; the dense\n  shard is then all-reduced over e = " << e
        << " (the dp table above); the dense optimizer states are sharded over dp only\n";
}

std::string moe_mismatches(const LedgerCheck& c, const RankCheck& rc) {
  const std::string who = " rank " + std::to_string(rc.rank) + " ";
  std::string s;
  if (rc.expert_params_measured >= 0 && u64(rc.expert_params_measured) != rc.expert_params)
    s += who + "moe.expert_params (expected " + commas(rc.expert_params) + ", got " +
         commas(u64(rc.expert_params_measured)) + ")";
  for (const std::string& p : rc.moe_problems) s += who + "moe rows: " + p;
  for (const ActivationRow& r : rc.activations)
    if (r.totals && !r.match && r.in_formula && r.in_ledger)
      s += who + r.item + " (bytes allocated: expected " + commas(r.formula_total) + ", got " +
           commas(r.measured_total) + "; allocations " + commas(r.formula_allocations) + " / " +
           commas(r.measured_allocations) + "; peak " + commas(r.formula_peak) + " / " + commas(r.measured_peak) + ")";
  if (c.ep_checked && !rc.ep.match) {
    for (const EpPurposeRow& p : rc.ep.purposes)
      if (!p.match)
        s += who + "ep " + p.purpose + " over the run (expected " + commas(p.calls) + " calls, " + commas(p.elements) +
             " elements, " + commas(p.sent) + " B sent, " + commas(p.received) + " B received; got " +
             commas(p.calls_measured) + ", " + commas(p.elements_measured) + ", " + commas(p.sent_measured) + " B, " +
             commas(p.received_measured) + " B)";
    if (!rc.ep.bad_records.empty())
      s += who + "ep call " + rc.ep.bad_records.front() +
           (rc.ep.bad_records.size() > 1 ? " (and " + std::to_string(rc.ep.bad_records.size() - 1) + " more)" : "");
    for (const std::string& t : rc.ep.bad_tallies) s += who + t;
  }
  return s;
}

}  // namespace shardlab::plan
