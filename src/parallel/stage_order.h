// The textbook piece of a pipeline schedule (claims C20, C21), alone in one file so that another
// implementation can take its place (a seam: `make seam SEAM=src/parallel/stage_order.cpp WITH=FILE`,
// docs/architecture.md): the ORDER in which stage s of p runs the forwards and backwards of m micro-batches
// through its v model chunks — GPipe, 1F1B, interleaved. make_schedule (schedule.h) puts the messages around
// each (receive before, send after), the simulator plays the lists out and the executor (pipeline.h) runs
// them, whatever order is written here.
#pragma once
#include <vector>

#include "parallel/schedule.h"

namespace shardlab {

struct Compute {
  bool forward;
  int micro_batch, chunk;  // chunk: this stage's model chunk 0 … v−1
};

// Called only with a shape schedule_shape_problem accepts (gpipe and 1f1b: v = 1; interleaved: v ≥ 2 and m a
// multiple of p). Every backward must come after its forward, and backwards in micro-batch order on each
// chunk (so gradients accumulate as in one process).
std::vector<Compute> stage_order(ScheduleKind kind, int s, int p, int m, int v);

}  // namespace shardlab
