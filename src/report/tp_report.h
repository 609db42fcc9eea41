// report/tp_report.h — the tensor-parallel section of `shardlab plan --tp t [--sequence-parallel]` (claims
// C17–C19, C23): model states per rank, the chapter's C18 communication example with its round numbers
// beside the exact ring values, and Megatron's activation table (Korthikanti et al. 2022, Table 2) for
// the same dims. The itemised activations of one tp rank are printed by plan_report with the same t.
#pragma once

#include <cstdint>
#include <iosfwd>

#include "plan/activations.h"
#include "plan/state_bytes.h"

namespace shardlab::plan {

struct TpRequest {
  std::uint64_t tp = 1;
  bool sequence_parallel = false;
  double intra_gbps = 300, inter_gbps = 25;
};

// psi: the model's parameters; gpt: its dims when known exactly (preset: false, Ψ/t is the chapter's view).
void print_tensor_parallel(std::ostream& out, const TpRequest& q, const Recipe& recipe, std::uint64_t psi,
                           const GptDims* gpt, const ActivationDims& act);

}  // namespace shardlab::plan
