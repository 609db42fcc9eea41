// plan/ep_bytes.cpp — expert parallelism's all-to-alls and gradient ranges (see ep_bytes.h).
#include "plan/ep_bytes.h"

#include <algorithm>

namespace shardlab::plan {

namespace {
using u64 = std::uint64_t;
constexpr u64 kInt32 = 4;
}  // namespace

AllToAll ep_counts_call(u64 experts, u64 ep) {
  const u64 per = experts / ep;  // E/e counts to and from every member, this rank included
  return {"moe_counts", 2 * ep * per, kInt32, (ep - 1) * per * kInt32, (ep - 1) * per * kInt32};
}

AllToAll ep_dispatch_call(const MoeRows& r, u64 h, u64 w) {
  return {"moe_dispatch", (r.kept + r.received) * h, w, (r.kept - r.own) * h * w, (r.received - r.own) * h * w};
}

AllToAll ep_combine_call(const MoeRows& r, u64 h, u64 w) {
  return {"moe_combine", (r.received + r.kept) * h, w, (r.received - r.own) * h * w, (r.kept - r.own) * h * w};
}

std::vector<AllToAll> ep_block_calls(bool backward, bool full_recompute, const MoeRows& r, u64 h, u64 w, u64 experts,
                                     u64 ep) {
  std::vector<AllToAll> v;
  if (!backward || full_recompute)  // the forward (or, in backward, the recomputed forward)
    v = {ep_counts_call(experts, ep), ep_dispatch_call(r, h, w), ep_combine_call(r, h, w)};
  if (backward) {  // output gradients to the experts, input gradients back
    v.push_back(ep_dispatch_call(r, h, w));
    v.push_back(ep_combine_call(r, h, w));
  }
  return v;
}

EpLayerBytes ep_even_layer_bytes(u64 tokens, u64 k, u64 h, u64 w, u64 experts, u64 ep) {
  EpLayerBytes b;
  b.rows = tokens * k;
  b.all_to_all = b.rows * (ep - 1) / ep * h * w;  // all but the 1/e that stays home
  b.counts = (ep - 1) * (experts / ep) * kInt32;
  return b;
}

std::vector<GradRange> ep_grad_ranges(const GptDims& d, u64 tp, u64 ep, const std::vector<bool>& held, u64 padded,
                                      u64 bucket_elements) {
  const u64 units = d.layers + 2;
  auto holds = [&](u64 u) { return held.empty() || held[u]; };
  // Each unit's runs in the layout's order (model/param_layout.cpp): a MoE block's experts come last.
  std::vector<std::vector<std::pair<u64, bool>>> runs(units);
  if (holds(0)) runs[0] = {{d.vocab * d.hidden + d.seq * d.hidden, false}};
  for (u64 l = 0; l < d.layers; ++l) {
    if (!holds(l + 1)) continue;
    const u64 experts = d.moe.in_block(l) ? d.moe.experts / ep * expert_param_count(d) : 0;
    runs[l + 1] = {{block_param_count(d, l, tp, ep) - experts, false}};
    if (experts) runs[l + 1].push_back({experts, true});
  }
  if (holds(units - 1)) runs[units - 1] = {{2 * d.hidden + d.vocab / tp * d.hidden, false}};
  std::vector<u64> begin(units + 1, 0);
  for (u64 u = 0; u < units; ++u) {
    begin[u + 1] = begin[u];
    for (const auto& [n, expert] : runs[u]) begin[u + 1] += n;
  }
  u64 first = 0, last = 0;
  for (u64 u = 0; u < units; ++u)
    if (holds(u)) last = u;
  while (first < last && !holds(first)) ++first;
  runs[last].push_back({padded - begin[last + 1], false});  // the last held unit carries the padding
  // Buckets in backward order, each at least bucket_elements (the first held unit closes the last one).
  std::vector<GradRange> out;
  u64 hi = padded;
  for (u64 u = last + 1; u-- > first;) {
    if (!holds(u) || !(hi - begin[u] >= bucket_elements || u == first)) continue;
    const size_t bucket_start = out.size();
    u64 at = begin[u];
    for (u64 v = u; v <= last && at < hi; ++v)
      for (const auto& [n, expert] : runs[v]) {
        if (n == 0) continue;
        if (out.size() > bucket_start && out.back().expert == expert && out.back().hi == at)
          out.back().hi = at + n;
        else
          out.push_back({at, at + n, expert});
        at += n;
      }
    hi = begin[u];
  }
  return out;
}

}  // namespace shardlab::plan
