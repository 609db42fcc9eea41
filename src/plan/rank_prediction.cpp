// plan/rank_prediction.cpp — every rank's memory, bytes and step time of a layout of the trainer's GPT, before it runs
// (see rank_prediction.h).
#include "plan/rank_prediction.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "check/activation_check.h"
#include "check/ledger_check.h"
#include "check/ledger_read.h"
#include "check/moe_rank_check.h"
#include "comm/grid_coords.h"
#include "parallel/pipeline_partition.h"
#include "parallel/schedule.h"
#include "plan/cp_bytes.h"
#include "plan/ep_bytes.h"
#include "plan/exact_cp_bytes.h"
#include "plan/moe_items.h"
#include "plan/pipeline_stages.h"
#include "plan/tp_bytes.h"

namespace shardlab::plan {

namespace {
using u64 = std::uint64_t;

u64 grid_dp(const PredictSpec& s) {
  const u64 others = s.tp * s.pp * s.cp * s.ep;
  if (others == 0 || s.world % others != 0)
    throw std::runtime_error("tp × pp × cp × ep = " + std::to_string(others) + " does not divide the " +
                             std::to_string(s.world) + " ranks");
  const u64 dp = s.dp ? s.dp : s.world / others;
  if (dp * others != s.world)
    throw std::runtime_error("dp × tp × pp × cp × ep = " + std::to_string(dp * others) + " is not the " +
                             std::to_string(s.world) + " ranks");
  return dp;
}

u64 accum_of(const PredictSpec& s, u64 dp) {
  const u64 per_step = dp * s.ep * s.micro_batch;
  if (per_step == 0 || s.global_batch % per_step != 0)
    throw std::runtime_error("--global-batch " + std::to_string(s.global_batch) +
                             " is not a multiple of dp·ep·b = " + std::to_string(per_step));
  return s.global_batch / per_step;
}

GptDims dims_of(const PredictSpec& s) {
  GptDims d{s.vocab, s.seq, s.hidden, s.layers};
  d.moe.experts = s.experts;
  d.moe.top_k = s.top_k;
  return d;
}

// Ring messages of one dp phase call: (n − 1) steps, twice for an all-reduce; buckets of bucket_mb cut a call.
double dp_messages(const CommPhase& p, double bucket_bytes) {
  if (p.ring < 2) return 0;
  const double steps = double(p.ring - 1) * (p.op == RingOp::all_reduce ? 2 : 1);
  const double payload = double(p.elements * p.elem_bytes) * double(p.ring) / steps;
  return double(p.times) * steps * std::max(1.0, std::ceil(payload / bucket_bytes));
}
// The engine's bucket in gradient elements (as ep_grad_step_bytes cuts them).
u64 bucket_elements(const LedgerCheck& c) {
  return std::max<u64>(1, static_cast<u64>(c.bucket_mb * 1e6 / double(bytes_per_param(c.recipe)[Mem::grad])));
}
}  // namespace

std::string describe_layout(const PredictSpec& s) {
  const u64 dp = grid_dp(s), accum = accum_of(s, dp);
  const GptDims d = dims_of(s);
  nlohmann::json j;
  j["world_size"] = s.world;
  const nlohmann::json activations = {{"seq", s.seq},
                                      {"micro_batch", s.micro_batch},
                                      {"hidden", s.hidden},
                                      {"heads", s.heads},
                                      {"layers", s.layers},
                                      {"vocab", s.vocab},
                                      {"width", s.bf16  ? 2
                                                : s.f64 ? 8
                                                        : 4},
                                      {"stat_width", s.f64 ? 8 : 4},
                                      {"attention", attention_name(s.attention)},
                                      {"recompute", recompute_name(s.recompute)},
                                      {"dropout", 0.0},
                                      {"micro_batches", accum},
                                      {"tp", s.tp},
                                      {"sequence_parallel", s.sequence_parallel},
                                      {"cp", s.cp}};
  j["model"] = {{"params", tp_param_count(d, s.tp, s.ep)},
                {"dtype", s.f64 ? "f64" : "f32"},
                {"mixed", s.bf16 ? "bf16" : "none"},
                {"optimizer", "adamw"},
                {"grad_accum_dtype", "bf16"},
                {"master", "fp32"},
                {"momentum", 0.9},
                {"activations", activations}};
  j["layout"] = {{"dp", dp},
                 {"strategy", strategy_name(strategy_at(s.zero))},
                 {"ranks_per_node", 0},  // one host: every ring inside it
                 {"accum", accum},
                 {"steps", 1},
                 {"comm", "ring"},
                 {"tp", s.tp},
                 {"sequence_parallel", s.sequence_parallel},
                 {"cp", s.cp},
                 {"cp_split", "zigzag"},
                 {"ep", s.ep},
                 {"bucket_mb", s.bucket_mb},
                 {"pp", s.pp},
                 {"schedule", "1f1b"},
                 {"virtual_stages", 1},
                 {"exact", s.exact}};
  return j.dump();
}

LayoutPrediction predict_layout(const PredictSpec& s, const StepRates& rates) {
  const nlohmann::json j = nlohmann::json::parse(describe_layout(s));
  LedgerCheck c;
  c.psi = need_u64(j["model"], "params", "model");
  c.recipe = read_recipe(j["model"]);
  c.activation_shape = read_activation_shape(j["model"]["activations"]);
  c.activation_shape.moe = dims_of(s).moe;
  c.world_size = int(s.world);
  read_layout(j, &c);
  if (s.pp > 1)
    if (const std::string why = pipeline_problem(int(s.layers), c.pp, 1, c.schedule, {}); !why.empty())
      throw std::runtime_error(why);
  if (s.cp > 1 && s.seq % (2 * s.cp) != 0) throw std::runtime_error("cp > 1 needs seq a multiple of 2·cp (zigzag)");
  const bool moe = s.experts > 0;
  const ActivationShape& a = c.activation_shape;
  const StageShape shape = stage_shape(c);
  LayoutPrediction out;
  out.world = s.world;
  out.accum = c.layout.accum;

  // Compute: plan/step_time.h's FLOPs of a GPU's share of the whole model, then cut by stage below.
  SearchModel m{"gpt", c.psi, s.hidden, s.layers, s.heads, s.seq, s.vocab, s.experts, false};
  m.top_k = s.top_k;
  SearchLayout sl;
  sl.dp = c.grid_dp, sl.tp = s.tp, sl.pp = s.pp, sl.cp = s.cp, sl.ep = s.ep, sl.zero = s.zero;
  sl.micro_batch = s.micro_batch, sl.micro_batches = c.layout.accum, sl.recompute = s.recompute;
  sl.attention = s.attention;
  // Every stage's share: the blocks' FLOPs by its blocks, the head's (6·h·V per token, vocabulary-parallel over tp;
  // step_flops_per_gpu counts 2·h·V more under full recompute) on the last stage alone. Ideal 1F1B runs at the slowest
  // stage's pace (C20).
  SearchLayout whole = sl;
  whole.pp = 1;
  const double all_flops = step_flops_per_gpu(m, whole, s.global_batch).total();  // with experts: k MLPs, the router
  const double head_flops = (s.recompute == Recompute::full ? 8.0 : 6.0) * double(s.hidden * s.vocab) *
                            double(s.global_batch * s.seq) / double(c.grid_dp * s.ep * s.tp * s.cp);
  const PipelinePartition part = partition_layers(int(s.layers), int(s.pp), 1, {});
  auto stage_flops = [&](int stage) {
    return (all_flops - head_flops) * double(part.blocks_of(stage)) / double(s.layers) +
           (stage == int(s.pp) - 1 ? head_flops : 0.0);
  };
  double slowest = 0;
  // One rank runs alone (the other cores idle); more keep the cores busy, sharing caches and memory.
  const double rate = s.world == 1 ? rates.flops_alone_for(s.attention) : rates.flops_for(s.attention);
  for (int stage = 0; stage < int(s.pp); ++stage) slowest = std::max(slowest, stage_flops(stage) / rate);
  const double pipeline = c.pp > 1 ? 1 / (1 - bubble_formula(ScheduleKind::one_f_one_b, c.pp, int(c.layout.accum), 1))
                                   : 1.0;  // (m + p − 1)/m
  const double beta = rates.intra_bytes_per_s, alpha = rates.latency_s;

  for (u64 k = 0; k < s.world; ++k) {
    RankPrediction r;
    r.rank = int(k);
    const GridCoords at = coords_of_rank(GridSizes{int(c.grid_dp), int(c.tp), c.pp, int(c.cp), int(c.ep)}, int(k));
    r.dp = at.dp, r.tp = at.tp, r.pp = at.pp, r.cp = at.cp, r.ep = at.ep;
    u64 member = u64(at.dp) * c.cp + u64(at.cp);  // as check_ledger_text: the rank's place in the gradient group
    if (c.layout.strategy == Strategy::dp) member = member * c.ep + u64(at.ep);
    r.params = c.psi;
    std::vector<bool> held;
    if (c.pp > 1) {
      r.params = stage_param_count(shape, at.pp);
      held = stage_partition(shape).held_units(at.pp);
    }
    const PerCategory states = per_rank_model_state_bytes(c.recipe, r.params, c.layout);
    for (int i = 0; i < kNumCategories; ++i) r.model_states += states.v[i];
    const StageFacts st =
        c.pp > 1 ? stage_facts(c, at.pp) : StageFacts{a.layers, true, activation_peak(a, a.layers, true)};
    if (!moe) {
      r.activations_known = true, r.activation_peak = st.peak;
    } else if (c.pp == 1) {  // s·b·k rows per MoE block: dropless on one ep rank, the even load under ep
      r.activation_peak = moe_model_activation_peak(a);
      r.activations_known = c.ep == 1, r.activations_even = c.ep > 1;
    }
    r.dp_known = true;
    if (moe && c.ep > 1) {
      RankCheck rc;
      rc.rank = int(k), rc.psi = r.params, rc.grad_member = member, rc.ep_rank = at.ep;
      if (c.layout.strategy == Strategy::dp) {
        r.dp_bytes = ep_grad_step_bytes(c, held, rc).total();
        for (const GradRange& g : ep_grad_ranges(dims_of(s), c.tp, c.ep, held,
                                                 shard_layout(c.layout, r.params).padded(), bucket_elements(c)))
          if (const u64 n = g.expert ? c.grid_dp : c.grid_dp * c.ep; n > 1) r.dp_messages += 2.0 * double(n - 1);
      } else {
        r.dp_bytes = step_comm_bytes(c.recipe, r.params, c.layout, member).total().total();
        for (const CommPhase& p : step_comm_phases(c.recipe, r.params, c.layout, member))
          r.dp_messages += dp_messages(p, s.bucket_mb * 1e6);
        r.ep_grad_bytes =
            ep_sharded_step_bytes(c, held, rc, bytes_per_param(c.recipe)[Mem::grad]).total().total() - r.dp_bytes;
        r.ep_messages += 2.0 * double(c.ep - 1);
      }
      r.ep_even = true;  // the all-to-alls of every MoE block of every micro-batch, at s·b·k rows each way
      const u64 slots = moe_routed_slots(a);
      const MoeRows even{slots, slots, slots / c.ep};
      u64 moe_blocks = 0;
      for (u64 l = 0; l < s.layers; ++l) moe_blocks += a.moe.in_block(l) && (held.empty() || held[l + 1]) ? 1 : 0;
      for (bool backward : {false, true})
        for (const AllToAll& call : ep_block_calls(backward, s.recompute == Recompute::full, even, s.hidden,
                                                   u64(c.recipe.compute_bytes()), s.experts, c.ep)) {
          r.ep_all_to_all_bytes += moe_blocks * c.layout.accum * call.sent;
          r.ep_messages += double(moe_blocks * c.layout.accum * (c.ep - 1));
        }
    } else if (c.layout.dp > 1) {
      r.dp_bytes = step_comm_bytes(c.recipe, r.params, c.layout, member).total().total();
      for (const CommPhase& p : step_comm_phases(c.recipe, r.params, c.layout, member))
        r.dp_messages += dp_messages(p, s.bucket_mb * 1e6);
    }
    if (c.tp > 1) {
      TpShape t;
      t.gpt = dims_of(s);
      t.micro_batch = s.micro_batch, t.accum = c.layout.accum, t.tp = c.tp, t.recompute = s.recompute;
      t.act_bytes = u64(c.recipe.compute_bytes());
      t.grad_bytes = bytes_per_param(c.recipe)[Mem::grad];
      t.held = held, t.cp = c.cp;
      t.sequence_parallel = c.sequence_parallel, t.exact = c.layout.exact;
      const ShardLayout g = shard_layout(c.layout, r.params);
      const bool whole = c.layout.strategy == Strategy::dp || c.layout.exact;  // exact: merged before the dp sums
      const u64 lo = whole ? 0 : member * g.shard(), hi = whole ? g.padded() : lo + g.shard();
      for (const TpPhase& p : tp_step_phases(t, u64(at.tp), lo, hi)) {
        r.tp_bytes += p.bytes();
        r.tp_messages += double(p.times) * double(c.tp - 1) * (p.op == RingOp::all_reduce ? 2 : 1);
      }
    }
    if (c.pp > 1) {
      const u64 e = u64(c.recipe.compute_bytes());
      r.pp_bytes = stage_p2p_sent_bytes(shape, at.pp, s.micro_batch, c.layout.accum, e);
      const u64 rows = s.seq / s.cp / (c.sequence_parallel ? c.tp : 1);  // a message's tokens of each sample
      r.pp_messages = double(r.pp_bytes) / double(s.micro_batch * rows * s.hidden * e);
    }
    if (c.cp > 1) {
      CpShape cs;
      cs.seq = s.seq, cs.micro_batch = s.micro_batch, cs.hidden = s.hidden, cs.heads = s.heads, cs.tp = c.tp;
      cs.cp = c.cp, cs.blocks = st.blocks, cs.accum = c.layout.accum, cs.recompute = s.recompute;
      cs.elem_bytes = u64(c.recipe.compute_bytes()), cs.head = st.head, cs.exact = c.layout.exact;
      if (c.layout.exact) {  // no ring: whole samples' rows to and from the ranks that run them
        const ExactCpStep b = exact_cp_step(cs, st.head);
        r.cp_bytes = b.sent(), r.cp_messages = double(b.calls * (c.cp - 1));
      } else {
        const CpStepBytes b = cp_step_bytes(cs);
        r.cp_bytes = b.total(), r.cp_messages = double(b.messages);
      }
    }
    r.flops = stage_flops(at.pp);
    r.compute = r.flops / rate;
    r.updated_params = c.layout.strategy == Strategy::dp ? r.params : shard_layout(c.layout, r.params).shard();
    r.update_s = double(r.updated_params) * rates.update_s_per_param;
    r.dp_s = double(r.dp_bytes) / beta + r.dp_messages * alpha;
    r.tp_s = double(r.tp_bytes) / beta + r.tp_messages * alpha;
    r.pp_s = double(r.pp_bytes) / beta + r.pp_messages * alpha;
    r.cp_s = double(r.cp_bytes) / beta + r.cp_messages * alpha;
    r.ep_s = double(r.ep_grad_bytes + r.ep_all_to_all_bytes) / beta + r.ep_messages * alpha;
    r.bubble = slowest * pipeline - r.compute;  // filling, draining, and waiting for a slower stage
    out.step_seconds = std::max(out.step_seconds, r.step());
    out.ranks.push_back(r);
  }
  return out;
}

}  // namespace shardlab::plan
