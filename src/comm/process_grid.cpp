// Process grid construction (see process_grid.h).
#include "comm/process_grid.h"

#include <set>
#include <sstream>
#include <stdexcept>

namespace shardlab {

namespace {
int idx(Axis a) { return static_cast<int>(a); }
const Axis kOrder[] = {Axis::dp, Axis::pp, Axis::cp, Axis::ep, Axis::tp};  // outermost → innermost
}  // namespace

static std::vector<int> nodes_for(int world, int ranks_per_node) {
  if (ranks_per_node <= 0) return detect_node_of_rank();
  std::vector<int> n(world);
  for (int r = 0; r < world; ++r) n[r] = r / ranks_per_node;
  return n;
}

ProcessGrid::ProcessGrid(GridSizes sizes, int ranks_per_node, CommLedger* ledger, Trace* trace, CommImpl impl)
    : world_(Communicator::world(ledger, trace, {}, impl)), sizes_(sizes) {
  const int W = world_.size();
  if (ranks_per_node < 0) throw std::invalid_argument("--ranks-per-node must be positive");
  if (ranks_per_node > 0 && W % ranks_per_node != 0)
    throw std::invalid_argument("--ranks-per-node " + std::to_string(ranks_per_node) +
                                " does not divide the world size " + std::to_string(W));
  for (int s : {sizes.tp, sizes.pp, sizes.cp, sizes.ep})
    if (s <= 0) throw std::invalid_argument("--tp, --pp, --cp and --ep must be positive");
  const int others = sizes.tp * sizes.pp * sizes.cp * sizes.ep;
  if (sizes_.dp == 0) {
    if (W % others != 0)
      throw std::invalid_argument("tp × pp × cp × ep = " + std::to_string(others) + " does not divide the world size " +
                                  std::to_string(W));
    sizes_.dp = W / others;
  }
  if (sizes_.dp <= 0) throw std::invalid_argument("--dp must be positive");
  if (sizes_.dp * others != W) {
    std::ostringstream m;
    m << "dp × tp × pp × cp × ep = " << sizes_.dp << " × " << sizes.tp << " × " << sizes.pp << " × " << sizes.cp
      << " × " << sizes.ep << " = " << sizes_.dp * others << ", but the world has " << W << " ranks (mpirun -np "
      << sizes_.dp * others << ", or change the sizes)";
    throw std::invalid_argument(m.str());
  }
  simulated_ = ranks_per_node > 0;
  node_of_rank_ = nodes_for(W, ranks_per_node);
  world_ = Communicator::world(ledger, trace, node_of_rank_, impl);
  nodes_ = 0;
  for (int n : node_of_rank_) nodes_ = std::max(nodes_, n + 1);

  coords_ = coords_of_rank(sizes_, world_.rank());
  // One communicator per axis: the ranks that differ only in that coordinate.
  axes_.resize(6);
  for (Axis a : kOrder) {
    int color = 0;
    for (Axis b : kOrder) color = color * size(b) + (b == a ? 0 : coord(b));
    axes_[idx(a)] = std::make_unique<Communicator>(world_.split(color, coord(a), a));
  }
  // The gradient groups, booked as dp's traffic: dense parameters over dp × cp × ep in (dp, cp, ep) order,
  // experts over dp × cp.
  const int dp_cp = coord(Axis::dp) * sizes_.cp + coord(Axis::cp);
  if (sizes_.cp > 1 || sizes_.ep > 1) {
    const int color = coord(Axis::pp) * size(Axis::tp) + coord(Axis::tp);
    grad_group_ = std::make_unique<Communicator>(world_.split(color, dp_cp * sizes_.ep + coord(Axis::ep), Axis::dp));
  }
  if (sizes_.cp > 1 && sizes_.ep > 1) {
    const int color = (coord(Axis::pp) * size(Axis::ep) + coord(Axis::ep)) * size(Axis::tp) + coord(Axis::tp);
    expert_grad_group_ = std::make_unique<Communicator>(world_.split(color, dp_cp, Axis::dp));
  }
}

Communicator& ProcessGrid::grad_group() { return grad_group_ ? *grad_group_ : comm(Axis::dp); }

Communicator& ProcessGrid::expert_grad_group() {
  if (sizes_.ep == 1) return grad_group();
  return expert_grad_group_ ? *expert_grad_group_ : comm(Axis::dp);
}

int ProcessGrid::size(Axis a) const {
  switch (a) {
    case Axis::dp: return sizes_.dp;
    case Axis::tp: return sizes_.tp;
    case Axis::pp: return sizes_.pp;
    case Axis::cp: return sizes_.cp;
    case Axis::ep: return sizes_.ep;
    default: return world_.size();
  }
}

int ProcessGrid::coord(Axis a) const {
  switch (a) {
    case Axis::dp: return coords_.dp;
    case Axis::tp: return coords_.tp;
    case Axis::pp: return coords_.pp;
    case Axis::cp: return coords_.cp;
    case Axis::ep: return coords_.ep;
    default: return world_.rank();
  }
}

int ProcessGrid::world_rank_with(Axis a, int c) const {
  GridCoords k = coords_;
  (a == Axis::dp ? k.dp : a == Axis::pp ? k.pp : a == Axis::cp ? k.cp : a == Axis::ep ? k.ep : k.tp) = c;
  return rank_of_coords(sizes_, k);
}

Communicator& ProcessGrid::comm(Axis a) { return a == Axis::world ? world_ : *axes_[idx(a)]; }

Communicator& ProcessGrid::dp_in_node() {
  if (!dp_in_node_) {
    Communicator& dp = grad_group();
    std::vector<int> node_of_member = dp.all_gather_value(node());
    int here = 0;
    std::set<int> distinct;  // the nodes this dp group spans
    for (int n : node_of_member) {
      here += n == node();
      distinct.insert(n);
    }
    // Every node must hold the same number of dp members for the replicas to line up.
    std::vector<int> counts = dp.all_gather_value(here);
    for (int c : counts)
      if (c != counts[0] || distinct.size() < 2)
        throw std::invalid_argument(
            "--fsdp hybrid needs the data-parallel ranks spread evenly over at least 2 nodes "
            "(use --ranks-per-node K with K dividing --dp, K < --dp)");
    dp_in_node_ = std::make_unique<Communicator>(dp.split(node(), dp.rank(), Axis::dp));
    dp_across_nodes_ = std::make_unique<Communicator>(dp.split(dp_in_node_->rank(), node(), Axis::dp));
  }
  return *dp_in_node_;
}

Communicator& ProcessGrid::dp_across_nodes() {
  dp_in_node();
  return *dp_across_nodes_;
}

std::string ProcessGrid::to_string() const {
  std::ostringstream o;
  o << "rank " << world_.rank() << "/" << world_.size() << " node " << node() << "/" << nodes_
    << (simulated_ ? " (simulated)" : "") << ": dp " << coord(Axis::dp) << "/" << size(Axis::dp) << ", pp "
    << coord(Axis::pp) << "/" << size(Axis::pp) << ", cp " << coord(Axis::cp) << "/" << size(Axis::cp) << ", ep "
    << coord(Axis::ep) << "/" << size(Axis::ep) << ", tp " << coord(Axis::tp) << "/" << size(Axis::tp);
  return o.str();
}

}  // namespace shardlab
