// plan/comm_volume.h — bytes each rank sends per optimizer step under DP, ZeRO-1/2/3 and FSDP hybrid,
// with the trainer's hand-written ring (claims C8, C12, C14), split into intra- and inter-node links,
// and the time they take at a given bandwidth.
//
// The ring rule (claim C8): a ring of n members over a buffer split into chunks counts[0..n-1] (member
// c owns chunk c). Member r sends Σcounts − counts[r] in a reduce-scatter (it keeps its own chunk's
// sum), Σcounts − counts[(r+1) mod n] in an all-gather (every chunk but the one its successor owns
// passes through it), and both in an all-reduce. With equal shards S that is (n−1)·S per phase.
//
// Per optimizer step, per rank (legend in plan/sharding.h; b_g grad bytes, b_p param bytes):
//   DP          all-reduce grads once (accumulation syncs on the last micro-batch): 2(N−1)·S·b_g
//   ZeRO-1      reduce-scatter grads once + all-gather params: (N−1)·S·b_g + (N−1)·S·b_p
//   ZeRO-2      reduce-scatter grads after every micro-batch: A·(N−1)·S·b_g + (N−1)·S·b_p
//   ZeRO-3      per micro-batch: all-gather params for forward and for backward, reduce-scatter grads:
//               A·(2(N−1)·S·b_p + (N−1)·S·b_g) — 1.5× DP (claim C12)
//   hybrid      inside the node ZeRO-3 with G = K; across nodes one all-reduce of the S-element grad
//               shard among the M ranks with the same local index, chunked as evenly as possible.
// Links: member r sends to r+1 mod n; nodes are K consecutive ranks. A DP/ZeRO ring over M > 1 nodes
// crosses nodes on M of its N links; hybrid's inner rings stay in the node, its outer ring crosses.
//
// Leaves out: latency (α) terms, bucketing and overlap with compute (claims C9, C15), the scalar
// reductions of the loss and the gradient norm, and bytes inside MPI's built-in collectives.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plan/sharding.h"
#include "plan/state_bytes.h"

namespace shardlab::plan {

enum class RingOp { reduce_scatter, all_gather, all_reduce };
const char* ring_op_name(RingOp op);  // the comm ledger's op names: "reduce_scatter", ...

// Elements member `member` sends in one ring collective over chunks `counts` (claim C8).
std::uint64_t ring_sent_elements(RingOp op, const std::vector<std::uint64_t>& counts, std::size_t member);

// `total` elements in `members` chunks as evenly as possible: the first total mod members chunks
// are one element larger. even_chunk is chunk i of even_chunks without building the vector.
std::uint64_t even_chunk(std::uint64_t total, std::uint64_t members, std::uint64_t i);
std::vector<std::uint64_t> even_chunks(std::uint64_t total, std::uint64_t members);

// Bytes a rank sends, by the kind of link they leave on.
struct LinkBytes {
  std::uint64_t intra = 0, inter = 0;
  std::uint64_t total() const { return intra + inter; }
  LinkBytes& operator+=(const LinkBytes& o) {
    intra += o.intra;
    inter += o.inter;
    return *this;
  }
};

// One ring collective of a step, as one rank sees it.
struct CommPhase {
  std::string what;  // e.g. "all-gather params (forward)"
  RingOp op = RingOp::all_reduce;
  std::uint64_t times = 1;       // calls per optimizer step (A or 1)
  std::uint64_t ring = 1;        // ring size: N, K or M
  std::uint64_t elements = 0;    // elements this rank sends per call
  std::uint64_t elem_bytes = 0;  // b_g or b_p
  bool inter = false;            // this rank's successor in that ring is on another node
  std::uint64_t bytes() const { return times * elements * elem_bytes; }
};

// The phases of one optimizer step for rank `rank` (0 ≤ rank < N), in call order.
std::vector<CommPhase> step_comm_phases(const Recipe& r, std::uint64_t psi, const Layout& l, std::uint64_t rank);

// Bytes rank `rank` sends per optimizer step, by ledger op and in total.
struct StepComm {
  LinkBytes reduce_scatter, all_gather, all_reduce;
  LinkBytes& by_op(RingOp op);
  const LinkBytes& by_op(RingOp op) const;
  LinkBytes total() const;
};
StepComm step_comm_bytes(const Recipe& r, std::uint64_t psi, const Layout& l, std::uint64_t rank);

// Seconds for rank 0's step traffic with no overlap: a DP/ZeRO ring moves at its slowest link (the
// inter-node one once it spans M > 1 nodes); hybrid's intra bytes go at intra speed, then its inter
// bytes at inter speed. GB/s with 1 GB = 1e9 bytes.
long double step_comm_seconds(const Recipe& r, std::uint64_t psi, const Layout& l, double intra_gbps,
                              double inter_gbps);

}  // namespace shardlab::plan
