// Comm ledger: every byte a rank sends or receives through src/comm, by call. Each collective or
// point-to-point call gets a record — a per-rank sequence number, the op, the axis it ran on
// (dp, tp, pp, cp, ep or world), the implementation (ring | mpi), what it is for (its purpose, where one
// axis carries several kinds of traffic, e.g. tensor parallelism's regions and gradients), the payload, and the bytes
// sent and received split into intra-node and inter-node links. Lessons compare these with the chapter's ring formulas
// exactly. Leaves out: bytes inside MPI's own built-in collectives (impl "mpi" records the payload only; what MPI sends
// internally is not observable here).
#pragma once
#include <cstdint>
#include <deque>
#include <map>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace shardlab {

enum class Axis { world, dp, tp, pp, cp, ep };
const char* axis_name(Axis a);

struct CommCall {
  uint64_t seq = 0;  // 0, 1, 2, … per rank, in call order
  std::string
      op;  // reduce_scatter | all_gather | all_reduce | broadcast | all_to_all | send | recv | sendrecv | gather
  Axis axis = Axis::world;
  std::string impl;       // ring | mpi | p2p
  std::string purpose;    // what the call is for when an axis carries several kinds ("" = the axis's main traffic)
  uint64_t elements = 0;  // payload elements (the whole buffer of an all-reduce)
  uint64_t elem_bytes = 0;
  uint64_t sent_intra = 0, sent_inter = 0, recv_intra = 0, recv_inter = 0;  // bytes on this rank's links
  uint64_t sent() const { return sent_intra + sent_inter; }
  uint64_t recv() const { return recv_intra + recv_inter; }
};

class CommLedger {
 public:
  // Opens a record; the returned reference stays valid for the ledger's lifetime.
  CommCall& begin(const std::string& op, Axis axis, const std::string& impl, uint64_t elements, uint64_t elem_bytes,
                  const std::string& purpose = "");
  static void add_send(CommCall& c, uint64_t bytes, bool inter_node) {
    (inter_node ? c.sent_inter : c.sent_intra) += bytes;
  }
  static void add_recv(CommCall& c, uint64_t bytes, bool inter_node) {
    (inter_node ? c.recv_inter : c.recv_intra) += bytes;
  }

  const std::deque<CommCall>& calls() const { return calls_; }
  // Totals over every call matching op and axis ("" / nullptr = any).
  CommCall total(const std::string& op = "", const Axis* axis = nullptr) const;
  // Calls from sequence number `from_seq` on (e.g. one step's worth) summed.
  CommCall total_since(uint64_t from_seq, const std::string& op = "", const Axis* axis = nullptr) const;
  uint64_t next_seq() const { return seq_; }
  // {"totals": [{op, axis, impl, [purpose,] calls, elements, sent_intra, …}], "calls": [...the last max_calls...]}
  nlohmann::json to_json(size_t max_calls = 4000) const;

 private:
  std::deque<CommCall> calls_;
  uint64_t seq_ = 0;
};

}  // namespace shardlab
