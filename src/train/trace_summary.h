// `shardlab trace DIR`: reads DIR/trace.json and tells, per rank, how much communication ran
// hidden behind computation and how much was exposed (waited for) — the overlap of claims C9 and C15.
#pragma once
#include <string>
#include <vector>

namespace shardlab {
int trace_main(const std::vector<std::string>& args);
}
