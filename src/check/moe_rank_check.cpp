// check/moe_rank_check.cpp — one rank's experts in `plan --ledger` (see moe_rank_check.h).
#include "check/moe_rank_check.h"

#include <algorithm>
#include <stdexcept>

#include "check/activation_check.h"
#include "check/ledger_read.h"
#include "comm/grid_coords.h"
#include "core/exact_sum.h"
#include "plan/comm_volume.h"

namespace shardlab::plan {

namespace {
using u64 = std::uint64_t;
using u128 = unsigned __int128;

bool times_equals(u64 per_step, u64 steps, u64 measured) { return u128(per_step) * steps == u128(measured); }

// Dropless on one process every forward keeps and computes all s·b·k slots: the recorded rows must say so.
void dropless_rows_check(const ActivationShape& s, std::vector<ChunkRows>& rows, RankCheck* rc) {
  auto check = [&](std::vector<MoeRows>& f, u64 samples, const std::string& what) {
    ActivationShape a = s;
    a.micro_batch = samples;
    const MoeRows want = dropless_rows(a);
    for (MoeRows& r : f) {
      if ((r.kept != want.kept || r.received != want.received || r.own != want.own) && rc->moe_problems.size() < 4)
        rc->moe_problems.push_back(what + ": rows n, m, own = " + std::to_string(r.kept) + ", " +
                                   std::to_string(r.received) + ", " + std::to_string(r.own) +
                                   ", expected s·b·k = " + std::to_string(want.kept) + " each (dropless, one process)");
      r = want;  // the formula's rows from here on
    }
  };
  for (ChunkRows& c : rows) {
    for (size_t f = 0; f < c.train.size(); ++f)
      check(c.train[f], s.micro_batch, "training forward " + std::to_string(f));
    for (size_t e = 0; e < c.eval.size(); ++e)
      check(c.eval[e], c.eval_samples[e], "evaluation forward " + std::to_string(e));
  }
}

// The exact mode with experts (parallel/exact_grads.cpp), per step, in 32-byte order-free sums: the gradients — DP:
// each run of dense tensors all-reduced over dp·ep and each run of experts over dp; ZeRO/FSDP: the strategy's dp
// rings, then this rank's shard of the dense runs over ep — the norm's sum over the shard group (and over ep when
// sharded), and the loss and the two router losses, each one element merged over ep and then over dp.
StepComm exact_ep_step_bytes(const LedgerCheck& c, const std::vector<bool>& held, const RankCheck& rc) {
  constexpr u64 e = sizeof(ExactSum);
  const ActivationShape& a = c.activation_shape;
  const GptDims gpt{a.vocab, a.seq, a.hidden, a.layers, a.moe};
  const u64 dp = c.grid_dp, E = c.ep;
  const GridCoords me = coords_of_rank(GridSizes{int(dp), int(c.tp), c.pp, int(c.cp), int(E)}, rc.rank);
  const u64 dense_member = u64(me.dp) * E + u64(me.ep);
  auto ring = [&](u64 elements, u64 members, u64 member) {
    return members > 1 ? ring_sent_elements(RingOp::all_reduce, even_chunks(elements, members), member) * e : 0;
  };
  StepComm out;
  if (c.layout.strategy == Strategy::dp) {
    const u64 padded = shard_layout(c.layout, rc.psi).padded();
    u64& sent = out.all_reduce.intra;  // links are not told apart here: totals are compared
    for (const GradRange& r : ep_grad_ranges(gpt, c.tp, E, held, padded, padded))
      sent += r.expert ? ring(r.hi - r.lo, dp, me.dp) : ring(r.hi - r.lo, dp * E, dense_member);
    sent += ring(1, dp * E, dense_member);                     // the norm
    sent += c.layout.exact_scalars * ring(1, dp, u64(me.dp));  // the losses over dp
  } else {
    out = ep_sharded_step_bytes(c, held, rc, e);     // over dp: grads, params, the norm, the losses; the dense shard
    out.all_reduce.intra += ring(1, E, u64(me.ep));  // the norm over ep
  }
  out.all_reduce.intra += c.layout.exact_scalars * ring(1, E, u64(me.ep));  // the losses over ep
  return out;
}

// The measured side: the dp rings, and the ep all-reduces of the given purposes.
StepComm measured_with_ep(const Json& rank, const std::string& where, const std::vector<std::string>& purposes) {
  StepComm m = measured_dp_ring(rank, where);
  for (const Json& t : need(need(rank, "comm", where), "totals", where + ".comm")) {
    const std::string w = where + ".comm.totals[]";
    if (need_string(t, "axis", w) != "ep" || need_string(t, "op", w) != "all_reduce" ||
        need_string(t, "impl", w) != "ring" || !t.contains("purpose") ||
        std::find(purposes.begin(), purposes.end(), need_string(t, "purpose", w)) == purposes.end())
      continue;
    m.all_reduce.intra += need_u64(t, "sent_intra", w) + need_u64(t, "sent_inter", w);
  }
  return m;
}
}  // namespace

// The dp axis's all-reduces of one step under expert parallelism: bytes this rank sends, by link kind.
LinkBytes ep_grad_step_bytes(const LedgerCheck& c, const std::vector<bool>& held, const RankCheck& rc) {
  const ActivationShape& a = c.activation_shape;
  const GptDims gpt{a.vocab, a.seq, a.hidden, a.layers, a.moe};
  const u64 gb = bytes_per_param(c.recipe)[Mem::grad], dp = c.grid_dp, E = c.ep, K = c.world_ranks_per_node;
  const u64 bucket = std::max<u64>(1, static_cast<u64>(c.bucket_mb * 1e6 / double(gb)));
  const GridSizes sizes{int(dp), int(c.tp), c.pp, int(c.cp), int(E)};
  GridCoords me = coords_of_rank(sizes, rc.rank);
  LinkBytes out;
  for (const GradRange& r : ep_grad_ranges(gpt, c.tp, E, held, shard_layout(c.layout, rc.psi).padded(), bucket)) {
    const u64 members = r.expert ? dp : dp * E;  // the experts' group: same experts, other samples
    if (members == 1) continue;                  // nobody else holds them
    const u64 member = r.expert ? u64(me.dp) : u64(me.dp) * E + u64(me.ep), next = (member + 1) % members;
    GridCoords to = me;  // the member this rank sends to in the ring
    if (r.expert)
      to.dp = int(next);
    else
      to.dp = int(next / E), to.ep = int(next % E);
    const u64 sent = ring_sent_elements(RingOp::all_reduce, even_chunks(r.hi - r.lo, members), member) * gb;
    const bool inter = K && u64(rc.rank) / K != u64(rank_of_coords(sizes, to)) / K;
    (inter ? out.inter : out.intra) += sent;
  }
  return out;
}

// ZeRO/FSDP with experts (parallel/across_ep.cpp): the dp rings of the gradient group's strategy over dp × cp (the
// layout's own: the exact mode's 32-byte sums when c.layout.exact), plus one all-reduce over ep of this rank's shard of
// the dense gradients (padding included) per step, of elem_bytes each.
StepComm ep_sharded_step_bytes(const LedgerCheck& c, const std::vector<bool>& held, const RankCheck& rc,
                               u64 elem_bytes) {
  const ActivationShape& a = c.activation_shape;
  const GptDims gpt{a.vocab, a.seq, a.hidden, a.layers, a.moe};
  Layout l = c.layout;
  l.ranks_per_node = 0;  // links are not told apart here: totals are compared
  StepComm out = step_comm_bytes(c.recipe, rc.psi, l, rc.grad_member);
  const ShardLayout sh = shard_layout(c.layout, rc.psi);
  const u64 lo = rc.grad_member * sh.shard(), hi = lo + sh.shard();
  u64 dense = 0;
  for (const GradRange& r : ep_grad_ranges(gpt, c.tp, c.ep, held, sh.padded(), sh.padded()))
    if (!r.expert) dense += r.hi > lo && r.lo < hi ? std::min(hi, r.hi) - std::max(lo, r.lo) : 0;
  if (dense > 0)
    out.all_reduce.intra +=
        ring_sent_elements(RingOp::all_reduce, even_chunks(dense, c.ep), size_t(rc.ep_rank)) * elem_bytes;
  return out;
}

void read_moe_section(const Json& j, LedgerCheck* c) {
  if (!j.contains("moe")) {
    if (c->ep > 1) throw std::runtime_error("layout.ep " + std::to_string(c->ep) + " without a \"moe\" section");
    return;
  }
  if (!c->activations_checked) throw std::runtime_error("a ledger with experts needs model.activations");
  const Json& m = j.at("moe");
  ActivationShape& s = c->activation_shape;
  s.moe.experts = need_in(m, "experts", "moe", 1, 1u << 20);
  s.moe.top_k = need_in(m, "top_k", "moe", 1, s.moe.experts);
  s.moe.every = need_in(m, "every", "moe", 1, s.layers);
  s.moe.ffn = need_in(m, "ffn", "moe", 1, 1u << 24);
  c->moe_capacity = need_in(m, "capacity_slots_per_sample", "moe", 0, u64(1) << 30);
  if (m.contains("ep") && need_u64(m, "ep", "moe") != c->ep)
    throw std::runtime_error("moe.ep " + std::to_string(need_u64(m, "ep", "moe")) + " and layout.ep " +
                             std::to_string(c->ep) + " disagree");
  if (s.moe.experts % c->ep != 0)
    throw std::runtime_error("moe.experts " + std::to_string(s.moe.experts) + " is not divisible by layout.ep " +
                             std::to_string(c->ep) + ": no run does that");
  if (c->cp > 1 || c->sequence_parallel)
    throw std::runtime_error(
        "experts with cp or sequence parallelism: no run does that (a sample routes as one group)");
  c->moe_rows_recorded = c->moe_capacity > 0 || c->ep > 1;
  c->layout.exact_scalars = 3;  // --exact: the loss and the two router losses, each its own order-free sum
}

void check_moe_rank(const Json& rank, const LedgerCheck& c, const std::vector<bool>& held, RankCheck* rc) {
  const ActivationShape& s = c.activation_shape;
  const std::string where = "rank " + std::to_string(rc->rank);
  const GptDims gpt{s.vocab, s.seq, s.hidden, s.layers, s.moe};
  const PipelinePartition part = stage_partition(stage_shape(c));
  std::vector<std::vector<int>> layers;  // each chunk's MoE blocks
  for (int k = 0; k < part.virtual_stages; ++k) {
    const ChunkSpec spec = part.chunk(rc->pp_rank, k);
    layers.emplace_back();
    for (int l = spec.first_block; l < spec.end_block; ++l)
      if (s.moe.in_block(l)) {
        layers.back().push_back(l);
        rc->expert_params += s.moe.experts / c.ep * expert_param_count(gpt);
      }
  }
  if (rank.contains("moe") && rank.at("moe").contains("expert_params"))
    rc->expert_params_measured = static_cast<std::int64_t>(
        std::min<u64>(need_u64(rank.at("moe"), "expert_params", where + " moe"), u64(1) << 62));
  std::vector<ChunkRows> rows = read_moe_rows(rank, layers, c.steps * c.layout.accum, where);
  if (!c.moe_rows_recorded) dropless_rows_check(s, rows, rc);
  bool first = true;
  for (const ChunkRows& cr : rows)
    for (const std::vector<MoeRows>& f : cr.train)
      for (const MoeRows& r : f) {
        rc->kept_min = first ? r.kept : std::min(rc->kept_min, r.kept);
        rc->received_min = first ? r.received : std::min(rc->received_min, r.received);
        rc->kept_max = std::max(rc->kept_max, r.kept), rc->received_max = std::max(rc->received_max, r.received);
        first = false;
      }
  check_moe_activations(rank, c, rows, rc);
  if (!c.ep_checked) return;
  EpRankShape es;
  es.hidden = s.hidden;
  es.elem_bytes = u64(c.recipe.compute_bytes());
  es.experts = s.moe.experts;
  es.ep = c.ep;
  es.top_k = s.moe.top_k;
  es.tokens = s.seq * s.micro_batch;
  es.full_recompute = s.recompute == Recompute::full;
  es.steps = c.steps;
  es.accum = c.layout.accum;
  const StageActions actions =
      make_schedule(c.schedule, c.pp, static_cast<int>(c.layout.accum), c.virtual_stages)[rc->pp_rank];
  rc->ep = check_ep_rank(rank, es, ep_run_calls(es, actions, rows), c.comm_checked, where);
  if (!c.comm_checked) return;
  CommRow& m = rc->comm;  // claims C8, C25: dense gradients over dp·ep, the experts' over dp
  m.steps = c.steps;
  if (c.layout.exact) {  // the 32-byte order-free sums
    m.formula = exact_ep_step_bytes(c, held, *rc);
    m.measured = measured_with_ep(rank, where, {"exact_grads", "exact_norm", "exact_loss"});
    m.split = false;
  } else if (c.layout.strategy == Strategy::dp) {
    m.formula = StepComm{};
    m.formula.all_reduce = ep_grad_step_bytes(c, held, *rc);
    m.measured = measured_dp_ring(rank, where);
    m.split = c.world_ranks_per_node > 0;
  } else {  // claims C12, C14 over dp, then the dense shard over ep
    m.formula = ep_sharded_step_bytes(c, held, *rc, bytes_per_param(c.recipe)[Mem::grad]);
    m.measured = measured_with_ep(rank, where, {"dense_grads"});
    m.split = false;
  }
  const LinkBytes f = m.formula.total(), got = m.measured.total();
  m.match = m.split ? times_equals(f.intra, c.steps, got.intra) && times_equals(f.inter, c.steps, got.inter)
                    : times_equals(f.total(), c.steps, got.total());
}

}  // namespace shardlab::plan
