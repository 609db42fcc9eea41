// The trace summary: reads DIR/trace.json and tells, per rank, how much communication ran hidden
// behind computation and how much was exposed (waited for) — the overlap of claims C9 and C15 — and,
// per kind of collective, the share hidden.
#pragma once
#include <string>

namespace shardlab {

// Prints the summary of run_dir/trace.json; throws std::runtime_error if it cannot be read.
int print_trace_summary(const std::string& run_dir);

}  // namespace shardlab
