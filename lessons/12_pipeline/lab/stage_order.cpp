// Lab 12 — the 1F1B schedule: your stage_order.cpp (the task: LAB_README.md; the contract:
// src/parallel/stage_order.h). GPipe is written, as an example; write 1F1B, then (a stretch) interleaved.
// Each stage gets its own list: Compute{forward, micro_batch, chunk}. The simulator (shardlab schedule) and
// the executor run whatever order you write; a list that deadlocks is refused, named.
// Grade it: make lab LAB=12 SOLUTION=<this file>
#include "parallel/stage_order.h"

#include <algorithm>

#include "core/not_written.h"

namespace shardlab {

namespace {

// (You may use this for the stretch.) Interleaved: the j-th forward (or backward) of a stage is micro-batch (j /
// (p·v))·p + j mod p of chunk (j mod (p·v)) / p — micro-batches in groups of p through chunk 0, then the same group
// through chunk 1, …; backwards walk the chunks from the last.
[[maybe_unused]] Compute interleaved_unit(int j, bool forward, int p, int v) {
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
    not_written_yet("stage_order for 1f1b");
  } else {
    not_written_yet("stage_order for interleaved (the stretch)");
  }
  return order;
}

}  // namespace shardlab
