// ProcessGrid under any world size: axis sizes and coordinates follow the documented order
// (world rank = (((dp·PP + pp)·CP + cp)·EP + ep)·TP + tp), every axis communicator holds exactly the
// ranks that differ only in that coordinate, nodes come from --ranks-per-node, the hybrid groups
// split dp by node, and bad sizes are refused with a message.
#include <catch2/catch.hpp>

#include <stdexcept>

#include "comm/process_grid.h"
#include "helpers.h"

using namespace shardlab;

namespace {

// Members of comm(a), as world ranks, in member order.
std::vector<int> members(ProcessGrid& g, Axis a) { return g.comm(a).all_gather_value<int>(g.world_rank()); }

}  // namespace

TEST_CASE("process grid: pure data parallel by default", "[grid]") {
  const int W = test::world_size();
  ProcessGrid g(GridSizes{}, 0, nullptr, nullptr, CommImpl::ring);
  CHECK(g.world_size() == W);
  CHECK(g.size(Axis::dp) == W);
  CHECK(g.coord(Axis::dp) == g.world_rank());
  for (Axis a : {Axis::tp, Axis::pp, Axis::cp, Axis::ep}) {
    CHECK(g.size(a) == 1);
    CHECK(g.coord(a) == 0);
    CHECK(g.comm(a).size() == 1);
  }
  std::vector<int> dp = members(g, Axis::dp);
  for (int m = 0; m < W; ++m) CHECK(dp[m] == m);
  CHECK(g.next(Axis::dp) == (g.world_rank() + 1) % W);
  CHECK(g.prev(Axis::dp) == (g.world_rank() + W - 1) % W);
  CHECK(g.to_string().find("dp " + std::to_string(g.world_rank()) + "/" + std::to_string(W)) != std::string::npos);
}

TEST_CASE("process grid: tp is innermost, pp next, dp outermost", "[grid]") {
  const int W = test::world_size();
  if (W % 2 != 0) return;  // needs an even world
  const int r = [] {
    ProcessGrid g(GridSizes{}, 0, nullptr, nullptr, CommImpl::ring);
    return g.world_rank();
  }();
  {
    ProcessGrid g(GridSizes{0, 2, 1, 1, 1}, 0, nullptr, nullptr, CommImpl::ring);  // tp = 2
    CHECK(g.size(Axis::dp) == W / 2);
    CHECK(g.coord(Axis::tp) == r % 2);
    CHECK(g.coord(Axis::dp) == r / 2);
    CHECK(members(g, Axis::tp) == std::vector<int>{r - r % 2, r - r % 2 + 1});
    std::vector<int> dp = members(g, Axis::dp);
    for (int m = 0; m < W / 2; ++m) CHECK(dp[m] == 2 * m + r % 2);
    CHECK(g.world_rank_with(Axis::tp, 1 - r % 2) == (r ^ 1));
  }
  {
    ProcessGrid g(GridSizes{0, 1, 2, 1, 1}, 0, nullptr, nullptr, CommImpl::ring);  // pp = 2
    CHECK(g.coord(Axis::pp) == r % 2);
    CHECK(members(g, Axis::pp) == std::vector<int>{r - r % 2, r - r % 2 + 1});
  }
  if (W == 8) {
    ProcessGrid g(GridSizes{2, 2, 2, 1, 1}, 0, nullptr, nullptr, CommImpl::ring);  // dp 2 × pp 2 × tp 2
    CHECK(g.coord(Axis::tp) == r % 2);
    CHECK(g.coord(Axis::pp) == (r / 2) % 2);
    CHECK(g.coord(Axis::dp) == r / 4);
    CHECK(members(g, Axis::pp) == std::vector<int>{r - (r / 2 % 2) * 2, r - (r / 2 % 2) * 2 + 2});
    CHECK(members(g, Axis::dp) == std::vector<int>{r % 4, r % 4 + 4});
  }
}

TEST_CASE("process grid: sizes that do not multiply to the world are refused", "[grid]") {
  const int W = test::world_size();
  CHECK_THROWS_WITH(ProcessGrid(GridSizes{W + 1, 1, 1, 1, 1}, 0, nullptr, nullptr, CommImpl::ring),
                    Catch::Contains("world has " + std::to_string(W) + " ranks"));
  CHECK_THROWS_AS(ProcessGrid(GridSizes{0, W + 1, 1, 1, 1}, 0, nullptr, nullptr, CommImpl::ring),
                  std::invalid_argument);
  CHECK_THROWS_AS(ProcessGrid(GridSizes{0, 0, 1, 1, 1}, 0, nullptr, nullptr, CommImpl::ring), std::invalid_argument);
  if (W > 1)
    CHECK_THROWS_WITH(ProcessGrid(GridSizes{}, W + 1, nullptr, nullptr, CommImpl::ring),
                      Catch::Contains("does not divide"));
}

TEST_CASE("process grid: simulated nodes and the hybrid groups", "[grid]") {
  const int W = test::world_size();
  {
    ProcessGrid g(GridSizes{}, 1, nullptr, nullptr, CommImpl::ring);  // one rank per node
    CHECK(g.nodes() == W);
    CHECK(g.node() == g.world_rank());
    CHECK(g.simulated_nodes());
    CHECK(g.comm(Axis::dp).inter_node(g.next(Axis::dp)) == (W > 1));
  }
  {
    ProcessGrid g(GridSizes{}, W, nullptr, nullptr, CommImpl::ring);  // one node
    CHECK(g.nodes() == 1);
    if (W > 1) CHECK_THROWS_AS(g.dp_in_node(), std::invalid_argument);
  }
  if (W == 4) {
    ProcessGrid g(GridSizes{}, 2, nullptr, nullptr, CommImpl::ring);
    const int r = g.world_rank();
    CHECK(g.node() == r / 2);
    CHECK(g.dp_in_node().all_gather_value<int>(r) == std::vector<int>{r - r % 2, r - r % 2 + 1});
    CHECK(g.dp_across_nodes().all_gather_value<int>(r) == std::vector<int>{r % 2, r % 2 + 2});
  }
}
