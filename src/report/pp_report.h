// report/pp_report.h — the pipeline and 3D section of `shardlab plan --pp p [--micro-batches m --virtual-stages v]`
// (claims C20, C21, C22, C26): the bubble of each schedule for a range of m beside the formulas (from the
// schedules themselves, parallel/schedule.h), the stash each keeps per stage, the point-to-point bytes per
// micro-batch per border, and with --tp/--dp the 3D count of GPUs and model states per GPU, ZeRO-1 on top.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

#include "plan/activations.h"
#include "plan/state_bytes.h"

namespace shardlab::plan {

struct PpRequest {
  int pp = 1, micro_batches = 4, virtual_stages = 2;  // v: the interleaved schedule's chunks per stage
  int layers = 0;                                     // L (interleaved: p·v must divide it)
  std::uint64_t tp = 1, dp = 1;                       // the other axes, for the 3D count (C26)
};

void print_pipeline(std::ostream& out, const PpRequest& q, const Recipe& recipe, std::uint64_t psi,
                    const ActivationDims& act);

}  // namespace shardlab::plan
