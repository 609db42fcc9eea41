// The rank order of the process grid, in one place: world rank ↔ coordinates on the axes dp × pp × cp × ep × tp,
// outermost to innermost,
//     world rank = (((dp·PP + pp)·CP + cp)·EP + ep)·TP + tp
// so tensor-parallel partners are neighbours (kept inside a node, claims C19, C26), pipeline stages come
// next, and data parallel is outermost. Pure arithmetic: the grid (process_grid.h), a checkpoint's assembly
// (io/whole_checkpoint.cpp) and the ledger check (check/ledger_check.cpp) all map ranks through it.
#pragma once

namespace shardlab {

struct GridSizes {
  int dp = 0;  // 0: whatever the other axes leave of the world (resolved by the grid)
  int tp = 1, pp = 1, cp = 1, ep = 1;
};

struct GridCoords {
  int dp = 0, pp = 0, cp = 0, ep = 0, tp = 0;
};

// Sizes with dp resolved (> 0).
inline GridCoords coords_of_rank(const GridSizes& s, int world_rank) {
  GridCoords c;
  int r = world_rank;
  c.tp = r % s.tp, r /= s.tp;
  c.ep = r % s.ep, r /= s.ep;
  c.cp = r % s.cp, r /= s.cp;
  c.pp = r % s.pp, r /= s.pp;
  c.dp = r;
  return c;
}

inline int rank_of_coords(const GridSizes& s, const GridCoords& c) {
  return (((c.dp * s.pp + c.pp) * s.cp + c.cp) * s.ep + c.ep) * s.tp + c.tp;
}

}  // namespace shardlab
