// report/sharding_report.cpp — the DP / ZeRO / FSDP tables of `shardlab plan` (see sharding_report.h).
#include "report/sharding_report.h"

#include <algorithm>
#include <ostream>
#include <utility>
#include <vector>

#include "plan/comm_volume.h"
#include "report/format.h"

namespace shardlab::plan {

namespace {
using u64 = std::uint64_t;

long double secs(u64 bytes, double gbps) { return bytes / (gbps * 1e9L); }
std::string gbps_text(double g) { return shortest(g) + " GB/s"; }
std::string times_dp(u64 bytes, u64 dp_bytes) {
  return dp_bytes ? fixed(static_cast<long double>(bytes) / dp_bytes, 2) : "-";
}

// "0-6, 8-14, 16-22, …, 56-62 (56 ranks)": consecutive runs, the first few and the last.
std::string rank_list(const std::vector<u64>& ranks) {
  std::vector<std::pair<u64, u64>> runs;
  for (u64 r : ranks) {
    if (!runs.empty() && runs.back().second + 1 == r)
      runs.back().second = r;
    else
      runs.push_back({r, r});
  }
  auto run = [](const std::pair<u64, u64>& x) {
    return x.first == x.second ? std::to_string(x.first) : std::to_string(x.first) + "-" + std::to_string(x.second);
  };
  std::string s;
  const size_t shown = std::min<size_t>(runs.size(), 3);
  for (size_t i = 0; i < shown; ++i) s += (i ? ", " : "") + run(runs[i]);
  if (runs.size() > shown + 1) s += ", …";
  if (runs.size() > shown) s += ", " + run(runs.back());
  if (ranks.size() > 1) s += " (" + commas(ranks.size()) + " ranks)";
  return s;
}

// The side-by-side table's label of a strategy, with its FSDP name (claim C14).
std::string row_label(Strategy s, const Layout& l) {
  if (s == Strategy::hybrid) return "FSDP hybrid, K = " + std::to_string(l.ranks_per_node);
  const std::string f = fsdp_name(s);
  return std::string(strategy_label(s)) + (f.empty() ? "" : " (FSDP " + f + ")");
}

u64 comm_total(const Recipe& r, u64 psi, const Layout& l) { return step_comm_bytes(r, psi, l, 0).total().total(); }

void print_header(std::ostream& out, u64 psi, const ShardingRequest& q) {
  const Layout& l = q.layout;
  const ShardLayout sh = shard_layout(l, psi);
  out << "Data parallel (claims C7–C16): N = " << l.dp << " rank" << (l.dp == 1 ? "" : "s") << ", A = " << l.accum
      << " micro-batch" << (l.accum == 1 ? "" : "es") << " per optimizer step\n"
      << "  strategy: " << row_label(l.strategy, l) << ", chosen by " << q.chosen_by << "\n";
  if (q.nodes_given)
    out << "  nodes: " << ranks_per_node(l) << " consecutive ranks per node → " << num_nodes(l) << " node"
        << (num_nodes(l) == 1 ? "" : "s") << "\n";
  else
    out << "  nodes: every rank on one node (give --ranks-per-node K to split intra/inter-node bytes)\n";
  out << "  shard group G = " << (l.strategy == Strategy::hybrid ? "K" : "N") << " = " << sh.group
      << "; shard S = ⌈Ψ/G⌉ = " << commas(sh.shard()) << "\n  ";
  if (l.dp == 1)
    out << "N = 1: no padding, Ψ_pad = Ψ\n\n";
  else
    out << "every flat buffer padded to Ψ_pad = G·S = " << commas(sh.padded()) << " (Ψ + " << commas(sh.padded() - psi)
        << " zeros)\n\n";
}

void print_chosen_states(std::ostream& out, const Recipe& r, u64 psi, const Layout& l) {
  const PerCategory per = bytes_per_param(r);
  const PerCategory bytes = per_rank_model_state_bytes(r, psi, l);
  const u64 replica = model_state_bytes(r, psi).total();
  const Unit u = unit_for(bytes.total());
  out << "Per-rank model states, " << strategy_label(l.strategy)
      << ": a sharded category holds S elements, a replicated one Ψ_pad (claim C12)\n";
  Table t({"category", "B/param", "holds", "bytes per rank", u.name});
  for (int i = 0; i < kNumCategories; ++i) {
    const char* holds = per.v[i] == 0 ? "-" : is_sharded(l.strategy, category_at(i)) ? "S" : "Ψ_pad";
    t.row({mem_name(category_at(i)), std::to_string(per.v[i]), holds, commas(bytes.v[i]), in_unit(bytes.v[i], u)});
  }
  t.rule();
  t.row({"total", std::to_string(per.total()), "", commas(bytes.total()), in_unit(bytes.total(), u)});
  t.print(out);
  out << "  = " << model_state_formula(r, l.strategy) << " per rank; one unsharded replica holds "
      << in_unit(replica, unit_for(replica));
  if (bytes.total()) out << ", " << fixed(static_cast<long double>(replica) / bytes.total(), 2) << "× this";
  out << "\n\n";
}

void print_side_by_side(std::ostream& out, const Recipe& r, u64 psi, const ShardingRequest& q) {
  const Layout& l = q.layout;
  std::vector<Strategy> rows = {Strategy::dp, Strategy::zero1, Strategy::zero2, Strategy::zero3};
  if (l.strategy == Strategy::hybrid) rows.push_back(Strategy::hybrid);
  Layout dp = l;
  dp.strategy = Strategy::dp;
  const u64 dp_comm = comm_total(r, psi, dp);
  const Unit u = unit_for(model_state_bytes(r, psi).total());
  u64 max_comm = 0;
  for (Strategy s : rows) {
    Layout x = l;
    x.strategy = s;
    max_comm = std::max(max_comm, comm_total(r, psi, x));
  }
  const Unit cu = unit_for(max_comm);
  out << "DP / ZeRO-1 / ZeRO-2 / ZeRO-3 at N = " << l.dp << ", per rank; * = chosen (claims C8, C11–C14)\n";
  Table t({"strategy", "per rank", "formula", "N → ∞ floor", "comm/step", "× DP", "at " + gbps_text(q.intra_gbps),
           "at " + gbps_text(q.inter_gbps)});
  for (Strategy s : rows) {
    Layout x = l;
    x.strategy = s;
    const u64 states = per_rank_model_state_bytes(r, psi, x).total(), comm = comm_total(r, psi, x);
    // claim C13: as N → ∞ only the replicated part stays; hybrid shards over K, which N does not change.
    const u64 floor = s == Strategy::hybrid ? states : model_state_floor_bytes(r, psi, s).total();
    t.row({std::string(s == l.strategy ? "* " : "  ") + row_label(s, l), in_unit(states, u), model_state_formula(r, s),
           floor == 0 ? "→ 0" : in_unit(floor, u), in_unit(comm, cu), times_dp(comm, dp_comm),
           seconds_text(secs(comm, q.intra_gbps)), seconds_text(secs(comm, q.inter_gbps))});
  }
  t.print(out);
  const PerCategory per = bytes_per_param(r);
  out << "  floors (claim C13): ZeRO-1 keeps param + grad (" << per[Mem::param] + per[Mem::grad] << "Ψ), ZeRO-2 param ("
      << per[Mem::param] << "Ψ), ZeRO-3 → 0;"
      << (shard_layout(l, psi).padded() > psi ? " formulas write Ψ for Ψ_pad;" : "") << "\n"
      << "  DP never shrinks (claim C11). comm/step: bytes each rank sends per optimizer step;\n"
      << "  times: all of it over one link of that speed, no overlap\n\n";
}

void print_phases(std::ostream& out, const Recipe& r, u64 psi, const ShardingRequest& q) {
  const Layout& l = q.layout;
  const std::vector<CommPhase> phases = step_comm_phases(r, psi, l, 0);
  u64 total = 0;
  for (const CommPhase& p : phases) total += p.bytes();
  const Unit u = unit_for(total);
  out << "Communication per optimizer step, " << strategy_label(l.strategy)
      << ", rank 0 (ring: each phase sends (n−1)·S elements, claim C8)\n";
  Table t({"phase", "ring n", "calls/step", "elements/call", "B/elem", "bytes", u.name});
  for (const CommPhase& p : phases)
    t.row({p.what, std::to_string(p.ring), std::to_string(p.times), commas(p.elements), std::to_string(p.elem_bytes),
           commas(p.bytes()), in_unit(p.bytes(), u)});
  t.rule();
  t.row({"total", "", "", "", "", commas(total), in_unit(total, u)});
  t.print(out);
  if (l.exact) {  // parallel/exact_grads.cpp
    Layout normal = l;
    normal.exact = false;
    const u64 n = comm_total(r, psi, normal);
    out << "  --exact: every gradient travels once per step as a 32-byte order-free sum (core/exact_sum.h) instead of\n"
        << "  " << bytes_per_param(r)[Mem::grad]
        << " B, plus one sum each for the norm and the loss: " << (n ? times_dp(total, n) + " × " : "")
        << "the normal mode's " << in_unit(n, unit_for(n)) << "\n";
  }
  Layout dp = l;
  dp.strategy = Strategy::dp;
  const u64 dp_comm = comm_total(r, psi, dp);
  if (dp_comm) out << "  = " << times_dp(total, dp_comm) << " × DP's " << in_unit(dp_comm, unit_for(dp_comm));
  if (l.exact)
    out << " — the exact mode reduces the gradients once per step, whatever the strategy";
  else
    switch (l.strategy) {
      case Strategy::dp: out << " — one all-reduce = reduce-scatter + all-gather; accumulation syncs once"; break;
      case Strategy::zero1: out << " — reduce-scatter grads, update own shard, all-gather params (C12)"; break;
      case Strategy::zero2: out << " — ZeRO-2 keeps only its grad shard: it reduce-scatters every micro-batch"; break;
      case Strategy::zero3: out << " — params gathered for forward and backward (C12: 3Ψ vs DP's 2Ψ)"; break;
      case Strategy::hybrid: out << " — ZeRO-3 inside each node, one grad-shard all-reduce across nodes (C14)"; break;
    }
  out << "\n\n";
}

void print_links(std::ostream& out, const Recipe& r, u64 psi, const ShardingRequest& q) {
  const Layout& l = q.layout;
  std::vector<std::pair<LinkBytes, std::vector<u64>>> groups;  // ranks with the same intra/inter bytes
  for (u64 k = 0; k < l.dp; ++k) {
    const LinkBytes b = step_comm_bytes(r, psi, l, k).total();
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& g) { return g.first.intra == b.intra && g.first.inter == b.inter; });
    if (it == groups.end())
      groups.push_back({b, {k}});
    else
      it->second.push_back(k);
  }
  u64 max_bytes = 0;
  for (const auto& g : groups) max_bytes = std::max(max_bytes, g.first.total());
  const Unit u = unit_for(max_bytes);
  out << "Per-rank bytes by link, nodes of K = " << ranks_per_node(l) << " consecutive rank"
      << (ranks_per_node(l) == 1 ? "" : "s")
      << (l.strategy == Strategy::hybrid ? " (inner rings stay in a node, the outer ring crosses)"
                                         : " (rank r sends to r+1 mod N)")
      << "\n";
  Table t({"ranks", "intra-node", "inter-node"});
  for (const auto& g : groups) t.row({rank_list(g.second), in_unit(g.first.intra, u), in_unit(g.first.inter, u)});
  t.print(out);
  const long double s = step_comm_seconds(r, psi, l, q.intra_gbps, q.inter_gbps);
  out << "  time per step, no overlap: " << seconds_text(s);
  if (l.strategy == Strategy::hybrid)
    out << " (intra bytes at " << gbps_text(q.intra_gbps) << ", then inter at " << gbps_text(q.inter_gbps) << ")";
  else if (num_nodes(l) > 1)
    out << " — the ring spans " << num_nodes(l) << " nodes and moves at its slowest link (" << gbps_text(q.inter_gbps)
        << ", claim C15)";
  else
    out << " — one node: every link at " << gbps_text(q.intra_gbps);
  out << "\n\n";
}

void print_c8(std::ostream& out, const Recipe& r, u64 psi, const Layout& l, const ShardingRequest& q) {
  const u64 bg = bytes_per_param(r)[Mem::grad];
  Layout dp = l;
  dp.strategy = Strategy::dp;
  dp.exact = false;  // claim C8 is about the normal mode's gradients ("exact" below: the formula, not --exact)
  const u64 exact = comm_total(r, psi, dp), limit = 2 * psi * bg;
  const Unit u = unit_for(limit);
  out << "DP's gradient all-reduce, exact at this N versus the N → ∞ value (claim C8)\n";
  Table t({"case", "bytes per rank", "at " + gbps_text(q.intra_gbps), "at " + gbps_text(q.inter_gbps)});
  t.row({"exact, N = " + std::to_string(l.dp) + ": 2(N−1)·S·" + std::to_string(bg) + " B", in_unit(exact, u),
         seconds_text(secs(exact, q.intra_gbps)), seconds_text(secs(exact, q.inter_gbps))});
  t.row({"N → ∞: 2Ψ·" + std::to_string(bg) + " B", in_unit(limit, u), seconds_text(secs(limit, q.intra_gbps)),
         seconds_text(secs(limit, q.inter_gbps))});
  t.print(out);
  if (psi == 7000000000ULL && bg == 2)
    out << "  the chapter's \"~28 GB per GPU, 93 ms at 300 GB/s, ~1.1 s at 25 GB/s\" for 7B bf16 grads is the\n"
           "  N → ∞ row (2 × 14 GB); at N = "
        << l.dp << " a rank sends (N−1)/N of it\n";
  out << "\n";
}

void print_c16(std::ostream& out, const Recipe& r, u64 psi, const Layout& l, const ActivationDims& act,
               AttentionKernel attention) {
  const ActivationEstimate naive = estimate_activations(act, AttentionKernel::naive);
  const ActivationEstimate flash = estimate_activations(act, AttentionKernel::flash);
  const ActivationEstimate& mine = attention == AttentionKernel::flash ? flash : naive;
  const u64 states = per_rank_model_state_bytes(r, psi, l).total();
  auto own = [](u64 b) { return in_unit(b, unit_for(b)); };
  out << "Activations per rank are unchanged by DP/ZeRO/FSDP (claim C16): each rank still runs whole\n"
      << "micro-batches (b = " << act.micro_batch << ") through the whole model — " << own(naive.total) << " naive / "
      << own(flash.total) << " flash, as above.\n"
      << "Model FLOPs per token are unchanged too: DP splits the batch, not the work per token.\n"
      << "  " << strategy_label(l.strategy) << " per rank, model states + activations (" << attention_name(attention)
      << "): " << own(states) << " + " << own(mine.total) << " = " << own(states + mine.total) << "\n";
}
}  // namespace

void print_sharding(std::ostream& out, const Recipe& r, std::uint64_t psi, const ShardingRequest& q,
                    const ActivationDims& act, AttentionKernel attention) {
  print_header(out, psi, q);
  print_chosen_states(out, r, psi, q.layout);
  print_side_by_side(out, r, psi, q);
  print_phases(out, r, psi, q);
  print_links(out, r, psi, q);
  print_c8(out, r, psi, q.layout, q);
  print_c16(out, r, psi, q.layout, act, attention);
}

}  // namespace shardlab::plan
