// ProcessGrid: the world of ranks arranged as dp × pp × cp × ep × tp, with one communicator per
// axis; the rank order is grid_coords.h's (tensor-parallel partners neighbours, data parallel
// outermost). Nodes are groups of consecutive world ranks: K of them
// with --ranks-per-node K (simulated nodes on one machine), else the machine's shared-memory domains.
// For FSDP's hybrid strategy the dp group splits again into a node-local group (shard inside the
// node) and a cross-node group (replicate across nodes).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/grid_coords.h"

namespace shardlab {

class ProcessGrid {
 public:
  // Collective over the world. Throws std::invalid_argument with one sentence when the sizes do not
  // multiply to the world size, or ranks_per_node does not divide it.
  ProcessGrid(GridSizes sizes, int ranks_per_node, CommLedger* ledger, Trace* trace, CommImpl impl);

  int world_rank() const { return world_.rank(); }
  int world_size() const { return world_.size(); }
  int size(Axis a) const;
  int coord(Axis a) const;
  // Neighbours along an axis, as member indices of comm(a): the ring order every axis uses.
  int next(Axis a) const { return (coord(a) + 1) % size(a); }
  int prev(Axis a) const { return (coord(a) + size(a) - 1) % size(a); }
  // The world rank whose coordinates equal mine except `a`, which is `c`.
  int world_rank_with(Axis a, int c) const;
  GridCoords coords() const { return coords_; }
  GridCoords coords_of(int world_rank) const { return coords_of_rank(sizes_, world_rank); }
  Communicator& world() { return world_; }
  Communicator& comm(Axis a);
  int node() const { return node_of_rank_[world_.rank()]; }
  int nodes() const { return nodes_; }
  bool simulated_nodes() const { return simulated_; }
  // The ranks that hold the same parameters and add their gradients: the dp group, or with context parallelism
  // dp × cp (every cp rank saw other tokens of the same samples; Megatron's data-and-context group). Data
  // parallelism's rings, ZeRO's and FSDP's shards run over it; booked as dp traffic.
  // With expert parallelism the ep ranks hold other samples too: the group is dp × cp × ep for the dense
  // parameters, and each expert's parameters, which live on one ep rank, reduce over expert_grad_group() = dp × cp.
  Communicator& grad_group();
  Communicator& expert_grad_group();
  // FSDP hybrid: members of my gradient group on my node, and the members with my node-local index on every node.
  // Throws std::invalid_argument when the dp group does not spread evenly over ≥ 2 nodes.
  Communicator& dp_in_node();
  Communicator& dp_across_nodes();
  std::string to_string() const;

 private:
  Communicator world_;
  GridSizes sizes_;
  std::vector<int> node_of_rank_;
  int nodes_ = 1;
  bool simulated_ = false;
  GridCoords coords_;
  std::vector<std::unique_ptr<Communicator>> axes_;  // indexed by Axis (world slot unused)
  std::unique_ptr<Communicator> grad_group_, expert_grad_group_, dp_in_node_, dp_across_nodes_;
};

}  // namespace shardlab
