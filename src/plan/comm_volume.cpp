// plan/comm_volume.cpp — the ring rule and the per-step, per-rank bytes of DP / ZeRO / FSDP hybrid.
// See comm_volume.h for the formulas and what is left out.
#include "plan/comm_volume.h"

#include "core/exact_sum.h"

#include <algorithm>
#include <numeric>

namespace shardlab::plan {

namespace {
using u64 = std::uint64_t;

// ring_sent_elements over n equal chunks of `shard`: (n−1)·S per phase (claim C8), in O(1).
u64 equal_ring(RingOp op, u64 n, u64 shard) { return (op == RingOp::all_reduce ? 2 : 1) * (n - 1) * shard; }

CommPhase phase(std::string what, RingOp op, u64 times, u64 ring, u64 elements, u64 elem_bytes, bool inter) {
  CommPhase p;
  p.what = std::move(what);
  p.op = op;
  p.times = times;
  p.ring = ring;
  p.elements = elements;
  p.elem_bytes = elem_bytes;
  p.inter = inter;
  return p;
}
}  // namespace

const char* ring_op_name(RingOp op) {
  switch (op) {
    case RingOp::reduce_scatter: return "reduce_scatter";
    case RingOp::all_gather: return "all_gather";
    case RingOp::all_reduce: return "all_reduce";
  }
  return "?";
}

std::uint64_t ring_sent_elements(RingOp op, const std::vector<std::uint64_t>& counts, std::size_t member) {
  // claim C8. Reduce-scatter: in step k member r sends the partial sum of chunk (r−k−1) mod n and ends
  // holding chunk r's full sum, so every chunk but its own leaves it once. All-gather: member r starts
  // with chunk r and forwards each chunk it receives except the last, chunk (r+1) mod n, the one its
  // successor owns and already has.
  const std::size_t n = counts.size();
  if (n == 0 || member >= n) return 0;
  const u64 sum = std::accumulate(counts.begin(), counts.end(), u64{0});
  const u64 rs = sum - counts[member];
  const u64 ag = sum - counts[(member + 1) % n];
  switch (op) {
    case RingOp::reduce_scatter: return rs;
    case RingOp::all_gather: return ag;
    case RingOp::all_reduce: return rs + ag;
  }
  return 0;
}

std::uint64_t even_chunk(std::uint64_t total, std::uint64_t members, std::uint64_t i) {
  return total / members + (i < total % members ? 1 : 0);
}

std::vector<std::uint64_t> even_chunks(std::uint64_t total, std::uint64_t members) {
  std::vector<std::uint64_t> c(members);
  for (u64 i = 0; i < members; ++i) c[i] = even_chunk(total, members, i);
  return c;
}

// The exact mode (parallel/exact_grads.cpp): every rank's gradients as order-free sums of 32 bytes, combined once per
// step after the last micro-batch (an all-reduce, or a reduce-scatter to the owners; hybrid: then an all-reduce of the
// shard across nodes); the weights move as in the normal mode; and sums of one element each, all-reduced: the
// gradient norm over the shard group, and the loss (with experts also the two router losses) over the dp ranks
// (with cp: over the dp axis's N/cp).
namespace {
std::vector<CommPhase> exact_step_phases(const Layout& l, u64 rank, u64 S, u64 bp, bool cross) {
  constexpr u64 e = sizeof(ExactSum);
  const u64 N = l.dp, A = l.accum;
  using O = RingOp;
  std::vector<CommPhase> p;
  auto ring = [&](const char* what, RingOp op, u64 times, u64 n, u64 elem_bytes, bool inter) {
    p.push_back(phase(what, op, times, n, equal_ring(op, n, S), elem_bytes, inter));
  };
  auto one = [&](const char* what, u64 n, u64 member, bool inter, u64 times = 1) {  // one element all-reduced over n
    p.push_back(
        phase(what, O::all_reduce, times, n, ring_sent_elements(O::all_reduce, even_chunks(1, n), member), e, inter));
  };
  u64 group = N, member = rank;  // the shard group: the norm's
  switch (l.strategy) {
    case Strategy::dp: ring("all-reduce exact grads", O::all_reduce, 1, N, e, cross); break;
    case Strategy::zero1:
    case Strategy::zero2:
      ring("reduce-scatter exact grads", O::reduce_scatter, 1, N, e, cross);
      ring("all-gather params", O::all_gather, 1, N, bp, cross);
      break;
    case Strategy::zero3:
      ring("all-gather params (forward)", O::all_gather, A, N, bp, cross);
      ring("all-gather params (backward)", O::all_gather, A, N, bp, cross);
      ring("reduce-scatter exact grads", O::reduce_scatter, 1, N, e, cross);
      break;
    case Strategy::hybrid: {
      const u64 K = l.ranks_per_node, M = N / K, m = rank / K;
      ring("all-gather params (forward)", O::all_gather, A, K, bp, false);
      ring("all-gather params (backward)", O::all_gather, A, K, bp, false);
      ring("reduce-scatter exact grads", O::reduce_scatter, 1, K, e, false);
      const u64 sent = (S - even_chunk(S, M, m)) + (S - even_chunk(S, M, (m + 1) % M));
      if (M > 1) p.push_back(phase("all-reduce exact grad shard across nodes", O::all_reduce, 1, M, sent, e, true));
      group = K, member = rank % K;
      break;
    }
  }
  if (group > 1) one("all-reduce the norm's exact sum", group, member, l.strategy == Strategy::hybrid ? false : cross);
  const u64 loss_ranks = N / std::max<u64>(1, l.cp);  // the dp axis: the cp ranks' merge is on their own axis
  if (loss_ranks > 1)
    one(l.exact_scalars > 1 ? "all-reduce the losses' exact sums" : "all-reduce the loss's exact sum", loss_ranks,
        rank / std::max<u64>(1, l.cp), cross, l.exact_scalars);
  return p;
}
}  // namespace

std::vector<CommPhase> step_comm_phases(const Recipe& r, std::uint64_t psi, const Layout& l, std::uint64_t rank) {
  const PerCategory per = bytes_per_param(r);
  const u64 bg = per[Mem::grad], bp = per[Mem::param];
  const u64 N = l.dp, A = l.accum, S = shard_layout(l, psi).shard();
  using O = RingOp;
  std::vector<CommPhase> p;
  if (!layout_error(l).empty() || rank >= N) return p;
  const bool cross = node_of(l, rank) != node_of(l, (rank + 1) % N);  // r sends to r+1 mod N
  // A ring phase over n members with equal shards S: (n−1)·S elements sent per call (claim C8).
  auto ring = [&](const char* what, RingOp op, u64 times, u64 n, u64 elem_bytes, bool inter) {
    p.push_back(phase(what, op, times, n, equal_ring(op, n, S), elem_bytes, inter));
  };
  if (l.exact) return exact_step_phases(l, rank, S, bp, cross);
  switch (l.strategy) {
    case Strategy::dp:  // claim C8: gradient accumulation syncs only on the last micro-batch
      ring("all-reduce grads", O::all_reduce, 1, N, bg, cross);
      break;
    case Strategy::zero1:  // claim C12: full grads kept, reduce-scattered once, same volume as DP
    case Strategy::zero2:  // ZeRO-2 keeps only its grad shard, so it reduce-scatters every micro-batch
      ring("reduce-scatter grads", O::reduce_scatter, l.strategy == Strategy::zero2 ? A : 1, N, bg, cross);
      ring("all-gather params", O::all_gather, 1, N, bp, cross);
      break;
    case Strategy::zero3:  // claims C12, C14: gather before use in forward and in backward
      ring("all-gather params (forward)", O::all_gather, A, N, bp, cross);
      ring("all-gather params (backward)", O::all_gather, A, N, bp, cross);
      ring("reduce-scatter grads", O::reduce_scatter, A, N, bg, cross);
      break;
    case Strategy::hybrid: {  // claim C14: full shard inside the node, replicate across nodes
      const u64 K = l.ranks_per_node, M = N / K, m = rank / K;
      ring("all-gather params (forward)", O::all_gather, A, K, bp, false);
      ring("all-gather params (backward)", O::all_gather, A, K, bp, false);
      ring("reduce-scatter grads", O::reduce_scatter, A, K, bg, false);
      // One all-reduce of this rank's S-element grad shard among the M ranks with its local index,
      // in chunks as even as possible: member m sends (S − c_m) + (S − c_{(m+1) mod M}).
      const u64 sent = (S - even_chunk(S, M, m)) + (S - even_chunk(S, M, (m + 1) % M));
      p.push_back(phase("all-reduce grad shard across nodes", O::all_reduce, 1, M, sent, bg, M > 1));
      break;
    }
  }
  return p;
}

LinkBytes& StepComm::by_op(RingOp op) {
  return op == RingOp::reduce_scatter ? reduce_scatter : op == RingOp::all_gather ? all_gather : all_reduce;
}
const LinkBytes& StepComm::by_op(RingOp op) const { return const_cast<StepComm*>(this)->by_op(op); }

LinkBytes StepComm::total() const {
  LinkBytes t = reduce_scatter;
  t += all_gather;
  t += all_reduce;
  return t;
}

StepComm step_comm_bytes(const Recipe& r, std::uint64_t psi, const Layout& l, std::uint64_t rank) {
  StepComm c;
  for (const CommPhase& p : step_comm_phases(r, psi, l, rank)) {
    LinkBytes b;
    (p.inter ? b.inter : b.intra) = p.bytes();
    c.by_op(p.op) += b;
  }
  return c;
}

long double step_comm_seconds(const Recipe& r, std::uint64_t psi, const Layout& l, double intra_gbps,
                              double inter_gbps) {
  const long double intra = intra_gbps * 1e9L, inter = inter_gbps * 1e9L;
  if (l.strategy != Strategy::hybrid) {  // every rank sends the same; the ring waits for its slowest link
    const LinkBytes b = step_comm_bytes(r, psi, l, 0).total();
    return b.total() / (num_nodes(l) > 1 ? inter : intra);
  }
  long double worst = 0;  // outer-ring members differ by at most a few elements; take the slowest
  for (u64 m = 0; m < l.dp / l.ranks_per_node; ++m) {
    const LinkBytes b = step_comm_bytes(r, psi, l, m * l.ranks_per_node).total();
    worst = std::max(worst, b.intra / intra + b.inter / inter);
  }
  return worst;
}

}  // namespace shardlab::plan
