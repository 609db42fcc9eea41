// Control for lab 12: 1F1B written as GPipe (every forward, then every backward): the same bubble, the same numbers,
// but m micro-batches stashed on every stage
// loses: stash
// says: alive at once per stage: 8 8 8 8
#include "parallel/stage_order.h"

#include <algorithm>

namespace shardlab {

namespace {

// Interleaved: the j-th forward (or backward) of a stage is micro-batch (j / (p·v))·p + j mod p of chunk
// (j mod (p·v)) / p — micro-batches in groups of p through chunk 0, then the same group through chunk 1, …;
// backwards walk the chunks from the last.
Compute interleaved_unit(int j, bool forward, int p, int v) {
  const int in_group = j % (p * v), chunk = in_group / p;
  return {forward, (j / (p * v)) * p + j % p, forward ? chunk : v - 1 - chunk};
}

}  // namespace

std::vector<Compute> stage_order(ScheduleKind kind, int s, int p, int m, int v) {
  std::vector<Compute> order;
  if (kind == ScheduleKind::gpipe) {
    for (int i = 0; i < m; ++i) order.push_back({true, i, 0});
    for (int i = 0; i < m; ++i) order.push_back({false, i, 0});
  } else if (kind == ScheduleKind::one_f_one_b) {
    for (int i = 0; i < m; ++i) order.push_back({true, i, 0});
    for (int i = 0; i < m; ++i) order.push_back({false, i, 0});
  } else {
    const int total = m * v;
    const int warmup = std::min((p - s - 1) * 2 + (v - 1) * p, total);
    for (int j = 0; j < warmup; ++j) order.push_back(interleaved_unit(j, true, p, v));  // warmup
    for (int j = 0; j + warmup < total; ++j) {                                          // steady
      order.push_back(interleaved_unit(j + warmup, true, p, v));
      order.push_back(interleaved_unit(j, false, p, v));
    }
    for (int j = std::max(total - warmup, 0); j < total; ++j)  // cooldown
      order.push_back(interleaved_unit(j, false, p, v));
  }
  return order;
}

}  // namespace shardlab
