// report/pp_report.cpp — the pipeline and 3D section of `shardlab plan` (see pp_report.h).
#include "report/pp_report.h"

#include <algorithm>
#include <ostream>
#include <vector>

#include "parallel/schedule.h"
#include "plan/sharding.h"
#include "report/format.h"

namespace shardlab::plan {

namespace {
using u64 = std::uint64_t;

std::string percent(double x) { return fixed(100.0L * x, 1) + "%"; }

void print_bubbles(std::ostream& out, const PpRequest& q) {
  const int p = q.pp, v = q.virtual_stages;
  out << "\nPipeline over p = " << p << " stages (claims C20, C21): the bubble, the idle share of every stage's time,\n"
      << "from each schedule played out (a backward costing two forwards) beside the formulas\n";
  const std::string vs = std::to_string(v);
  Table t({"m", "gpipe", "1f1b", "(p−1)/(m+p−1)", "interleaved v=" + vs, "(p−1)/(" + vs + "m+p−1)", "stash gpipe",
           "stash 1f1b"});
  std::vector<int> ms = {1, 2, 4, 8, 16, 32};
  if (std::find(ms.begin(), ms.end(), q.micro_batches) == ms.end()) ms.push_back(q.micro_batches);
  for (int m : ms) {
    const Timeline g = simulate(make_schedule(ScheduleKind::gpipe, p, m, 1), 1, 1, 2);
    const Timeline f = simulate(make_schedule(ScheduleKind::one_f_one_b, p, m, 1), 1, 1, 2);
    std::string inter = "-", inter_formula = "-";
    if (m % p == 0 && p > 1 && q.layers % (p * v) == 0) {
      inter = percent(simulate(make_schedule(ScheduleKind::interleaved, p, m, v), v, 1, 2).bubble_fraction());
      inter_formula = percent(bubble_formula(ScheduleKind::interleaved, p, m, v));
    }
    t.row({std::to_string(m) + (m == q.micro_batches ? " *" : ""), percent(g.bubble_fraction()),
           percent(f.bubble_fraction()), percent(bubble_formula(ScheduleKind::one_f_one_b, p, m, 1)), inter,
           inter_formula, std::to_string(g.stash[0]), std::to_string(f.stash[0])});
  }
  t.print(out);
  out << "  * = --micro-batches. As overhead over the ideal time the bubble is (p−1)/m, and (p−1)/(v·m) interleaved\n"
      << "  (\"-\": interleaving needs m a multiple of p and the layers divisible by p·v).\n"
      << "  stash: micro-batches whose activations stage 0 keeps at once — GPipe all m, 1F1B at most p (C21);\n"
      << "  `shardlab schedule --pp " << p << " --micro-batches " << q.micro_batches << "` draws the grid, per stage\n";
}

void print_p2p(std::ostream& out, const ActivationDims& a, int p, int v) {
  const u64 per = a.micro_batch * a.seq * a.hidden * 2;  // bf16 activations, the chapter's
  out << "\nPoint to point (claim C22): b·s·h = " << a.micro_batch << "·" << a.seq << "·" << a.hidden
      << " elements per micro-batch across each border, " << format_bytes(double(per)) << " in bf16 —\n"
      << "  activations forward, gradients backward, no collectives; p − 1 = " << p - 1
      << " borders per micro-batch, p·v − 1 = " << p * v - 1 << " interleaved with v = " << v << "\n";
}

void print_3d(std::ostream& out, const PpRequest& q, const Recipe& r, u64 psi) {
  const u64 T = q.tp, P = q.pp, D = q.dp, gpus = D * T * P;
  const PerCategory whole = model_state_bytes(r, psi);
  const u64 per_gpu = whole.total() / (T * P);
  out << "\n3D: D × T × P = " << D << " × " << T << " × " << P << " = " << gpus
      << " GPUs (claim C26): TP inside a node, PP across nodes, DP outermost\n"
      << "  model states " << format_bytes(double(whole.total())) << " / (T·P = " << T * P
      << ") = " << format_bytes(double(per_gpu)) << " per GPU (every data-parallel replica holds them whole)\n";
  if (D < 2) return;  // one replica: nothing for ZeRO-1 to shard
  Layout z1;
  z1.strategy = Strategy::zero1;
  z1.dp = D;
  const u64 share = psi / (T * P);
  const PerCategory zero1 = per_rank_model_state_bytes(r, share, z1);
  out << "  with ZeRO-1 over the " << D << " replicas: " << format_bytes(double(zero1.total()))
      << " per GPU (the optimizer states of each slice sharded " << D
      << " ways: " << model_state_formula(r, Strategy::zero1) << " with Ψ = Ψ_total/(T·P))\n";
}
}  // namespace

void print_pipeline(std::ostream& out, const PpRequest& q, const Recipe& recipe, u64 psi, const ActivationDims& act) {
  print_bubbles(out, q);
  print_p2p(out, act, q.pp, q.virtual_stages);
  if (q.tp > 1 || q.dp > 1) print_3d(out, q, recipe, psi);
}

}  // namespace shardlab::plan
