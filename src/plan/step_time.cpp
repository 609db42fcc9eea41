// plan/step_time.cpp — the step-time model of a layout (see step_time.h).
#include "plan/step_time.h"

#include <algorithm>
#include <string>
#include <vector>

#include "parallel/schedule.h"
#include "plan/comm_volume.h"
#include "plan/cp_bytes.h"
#include "plan/ep_bytes.h"
#include "plan/pipeline_stages.h"
#include "plan/search_experts.h"
#include "plan/sharding.h"

namespace shardlab::plan {

namespace {
const char* const kDenseOverEp = "all-reduce dense grads over ep";  // ZeRO with experts, after the step

using u64 = std::uint64_t;
constexpr double kBf16 = 2;  // bytes of a communicated activation, gradient or parameter (C1's recipe)

// ZeRO with experts: the elements a GPU sends in its all-reduce over ep of its shard's dense gradients — the most
// any member of the gradient group and any ep rank sends. The trainer's GPT: the dense runs of each member's shard of
// the flat gradient buffer (the order plan/ep_bytes.h's ep_grad_ranges gives, the engine's and the ledger check's), in
// the ring's even chunks; a preset's Ψ has no order: ⌈dense/(dp·cp)⌉ spread evenly.
u64 dense_over_ep_elements(const SearchModel& m, const SearchLayout& l, const SearchMemory& mem) {
  const u64 group = l.dp * l.cp, dense = mem.psi_slice - mem.psi_experts;
  if (m.preset) return 2 * (l.ep - 1) * ((dense + group - 1) / group) / l.ep;
  Layout g;
  g.strategy = l.strategy(), g.dp = group;
  const ShardLayout sh = shard_layout(g, mem.psi_slice);
  std::vector<bool> held;
  if (l.pp > 1) {
    StageShape s;
    s.gpt = m.gpt(), s.tp = l.tp, s.pp = int(l.pp), s.ep = l.ep;
    held = stage_partition(s).held_units(mem.stage);
  }
  const std::vector<GradRange> runs = ep_grad_ranges(m.gpt(), l.tp, l.ep, held, sh.padded(), sh.padded());
  u64 most = 0;
  for (u64 member = 0; member < group; ++member) {
    const u64 lo = member * sh.shard(), hi = lo + sh.shard();
    u64 in_shard = 0;
    for (const GradRange& r : runs)
      if (!r.expert && r.hi > lo && r.lo < hi) in_shard += std::min(hi, r.hi) - std::max(lo, r.lo);
    for (u64 e = 0; e < l.ep; ++e)
      most = std::max(most, ring_sent_elements(RingOp::all_reduce, even_chunks(in_shard, l.ep), size_t(e)));
  }
  return most;
}

// The gradient group's ring phases of a step, each marked inter-node or not. Dense: the strategy's phases over dp·cp.
// With experts on ep > 1: plain DP all-reduces the dense gradients over dp·ep and the experts' over dp; ZeRO runs
// its phases over dp (the ranks holding the same experts) on the whole slice, then all-reduces its shard of the
// dense gradients over ep (parallel/across_ep.cpp).
std::vector<CommPhase> gradient_phases(const SearchModel& m, const SearchLayout& l, const SearchMemory& mem, u64 K) {
  const u64 N = l.gpus(), group = l.dp * l.cp;
  const bool wide = !inside_node(l.tp * l.cp * l.ep * l.dp, K, N);  // the gradient groups' span
  std::vector<CommPhase> out;
  auto add = [&](u64 psi, u64 members, bool inter) {
    if (members < 2 || psi == 0) return;
    Layout g;
    g.strategy = l.strategy(), g.dp = members, g.accum = l.micro_batches;
    for (CommPhase p : step_comm_phases(Recipe{}, psi, g, 0)) {
      p.inter = inter;
      out.push_back(p);
    }
  };
  if (l.ep < 2 || m.experts == 0) {
    add(mem.psi_slice, group, wide);
    return out;
  }
  const u64 dense = mem.psi_slice - mem.psi_experts;
  if (l.strategy() == Strategy::dp) {
    add(dense, group * l.ep, wide);
    add(mem.psi_experts, group, wide);
    return out;
  }
  add(mem.psi_slice, group, wide);
  CommPhase p;
  p.what = kDenseOverEp;
  p.op = RingOp::all_reduce, p.times = 1, p.ring = l.ep, p.elem_bytes = u64(kBf16);
  p.elements = dense_over_ep_elements(m, l, mem);
  p.inter = !inside_node(l.tp * l.cp * l.ep, K, N);
  out.push_back(p);
  return out;
}
}  // namespace

StepFlops step_flops_per_gpu(const SearchModel& m, const SearchLayout& l, u64 global_batch) {
  const double L = double(m.layers), s = double(m.seq), h = double(m.hidden);
  const GptDims d = m.gpt();
  const double matmul = m.preset ? double(m.psi) : double(gpt_matmul_param_count(d));
  // A MoE block's router and the k experts a token visits run whole on every tp rank (parallel/expert_parallel.h).
  const double whole = double(d.moe.blocks(d.layers)) *
                       (double(d.moe.experts) * h + double(d.moe.top_k) * 2 * h * double(d.moe.width(d.hidden)));
  const double split = matmul - whole;
  const double core_forward = 4 * L * s * h;  // QKᵀ and A·V of one token, all layers
  // A GPU's share: its tokens (1/(dp·ep)), its slice of each layer (1/(tp·cp); the experts' 1/cp) and its stage's
  // layers.
  const double stage = double(largest_stage_blocks(m, l.pp)) / L, tokens = double(global_batch) * s;
  const double sliced = stage / double(l.dp * l.ep * l.tp * l.cp), unsliced = stage / double(l.dp * l.ep * l.cp);
  auto work = [&](double matmul_flops_per_weight, double core) {
    return tokens * ((matmul_flops_per_weight * split + core) * sliced + matmul_flops_per_weight * whole * unsliced);
  };
  double extra = 0;
  if (l.recompute == Recompute::full) extra += work(2, core_forward);
  if (l.recompute == Recompute::selective || l.attention == AttentionKernel::flash) extra += work(0, core_forward);
  return StepFlops{work(6, 12 * L * s * h), extra};
}

double ring_seconds(bool all_reduce, u64 n, double bytes, double beta, double alpha) {
  if (n < 2) return 0;
  const double phases = all_reduce ? 2 : 1, N = double(n);
  return alpha + phases * (N - 1) / N * bytes / beta;
}

double updated_params_per_gpu(const SearchLayout& l, const SearchMemory& mem) {
  const u64 group = l.dp * l.cp;
  return double(l.strategy() == Strategy::dp ? mem.psi_slice : (mem.psi_slice + group - 1) / group);
}

bool inside_node(u64 span, u64 ranks_per_node, u64 gpus) { return span <= std::min(ranks_per_node, gpus); }

StepTime step_time(const SearchModel& m, const SearchLayout& l, u64 global_batch, const StepRates& r) {
  StepTime t;
  const u64 K = r.ranks_per_node, N = l.gpus(), blocks = largest_stage_blocks(m, l.pp), mb = l.micro_batches;
  auto beta = [&](bool inter) { return inter ? r.inter_bytes_per_s : r.intra_bytes_per_s; };
  const StepFlops f = step_flops_per_gpu(m, l, global_batch);
  t.flops = f.total();
  const double rate = r.flops_for(l.attention);
  t.compute = f.total() / rate;
  const double forward = f.base / 3 / rate, backward = t.compute - forward;  // recompute runs in backward
  const double activation_msg = double(l.micro_batch) * double(m.seq / l.cp) * double(m.hidden) * kBf16;

  if (l.tp > 1) {  // C18: 4 all-reduces per layer per micro-batch, synchronous
    t.tp_inter = !inside_node(l.tp, K, N);
    const double calls = 4.0 * double(blocks) * double(mb), share = double(l.tp - 1) / double(l.tp);
    const double b = beta(t.tp_inter);
    if (l.sequence_parallel) {  // C23: 4 all-gathers, 4 reduce-scatters and backward's 2 re-gathers (plan/tp_bytes.h)
      t.tp = 2.5 * calls * ring_seconds(false, l.tp, activation_msg, b, r.latency_s);
      t.tp_bytes = 2.5 * calls * share * activation_msg;
    } else {
      t.tp = calls * ring_seconds(true, l.tp, activation_msg, b, r.latency_s);
      t.tp_bytes = calls * 2 * share * activation_msg;
    }
  }
  if (l.cp > 1) {  // C24: ring attention's messages, exposed
    CpShape c;
    c.seq = m.seq, c.micro_batch = l.micro_batch, c.hidden = m.hidden, c.heads = m.heads;
    c.tp = l.tp, c.cp = l.cp, c.blocks = blocks, c.accum = mb, c.recompute = l.recompute, c.elem_bytes = u64(kBf16);
    const CpStepBytes bytes = cp_step_bytes(c);
    t.cp_inter = !inside_node(l.tp * l.cp, K, N);
    t.cp_bytes = double(bytes.total());
    t.cp = double(bytes.messages) * r.latency_s + t.cp_bytes / beta(t.cp_inter);
  }
  if (l.pp > 1) {  // C22: one message per micro-batch per border each way; exposed while filling and draining
    t.pp_inter = !inside_node(N, K, N);
    const double msg = activation_msg / (l.sequence_parallel ? double(l.tp) : 1.0);  // SP: a stage sends s/t rows
    t.pp_bytes = 2 * double(mb) * msg;
    t.pp = 2 * double(l.pp - 1) * (r.latency_s + msg / beta(t.pp_inter));
  }
  if (const EpStepTime e = ep_step_time(m, l, r); e.messages) {  // C25: the all-to-alls, exposed
    t.ep = e.seconds, t.ep_bytes = e.bytes, t.ep_inter = e.inter;
  }
  const SearchMemory mem = search_memory(m, l);
  t.update = updated_params_per_gpu(l, mem) * r.update_s_per_param;
  const std::vector<CommPhase> phases = gradient_phases(m, l, mem, K);
  if (!phases.empty()) {
    t.dp_inter = !inside_node(l.tp * l.cp * l.ep * l.dp, K, N);
    // Forward-side phases (parameter all-gathers) and backward-side ones (gradients, ZeRO-3's backward gathers).
    double comm[2] = {0, 0}, tail[2] = {0, 0};
    u64 calls[2] = {0, 0};
    for (const CommPhase& p : phases) {
      const double b = beta(p.inter);
      if (p.what == kDenseOverEp) {  // once per step after the last micro-batch (parallel/across_ep.cpp): exposed
        const double seconds = r.latency_s + double(p.elements * p.elem_bytes) / b;
        t.dp += seconds, t.dp_total += seconds, t.dp_bytes += double(p.bytes());
        continue;
      }
      const bool params = p.what.find("params") != std::string::npos;
      const int side = params && p.what.find("(backward)") == std::string::npos ? 0 : 1;
      const double sent = double(p.elements * p.elem_bytes);  // the ring's share of one call (C8)
      comm[side] += double(p.times) * (r.latency_s + sent / b);
      calls[side] = std::max(calls[side], p.times);
      // The last bucket waits for nothing: what one member sends of it, the ring's share (C8) of a bucket's bytes.
      const double share = (p.op == RingOp::all_reduce ? 2.0 : 1.0) * double(p.ring - 1) / double(p.ring);
      tail[side] = r.latency_s + std::min(r.bucket_bytes * share, sent) / b;
      t.dp_bytes += double(p.bytes());
    }
    const double window[2] = {forward, backward};
    for (int side = 0; side < 2; ++side) {
      if (comm[side] <= 0) continue;
      const double hidden_behind = window[side] * double(std::min(calls[side], mb)) / double(mb);
      t.dp += std::max(tail[side], comm[side] - hidden_behind);
      t.dp_total += comm[side];
    }
  }
  if (l.pp > 1) {  // 1F1B's bubble over the ideal time: f/(1−f) with f = (p−1)/(m+p−1), i.e. (p−1)/m
    const double idle = bubble_formula(ScheduleKind::one_f_one_b, static_cast<int>(l.pp), static_cast<int>(mb), 1);
    t.bubble = t.compute * idle / (1 - idle);
  }
  return t;
}

}  // namespace shardlab::plan
