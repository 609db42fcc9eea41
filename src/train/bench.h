// `shardlab bench`: single-rank training throughput against the machine's own GEMM speed.
#pragma once
#include <string>
#include <vector>

namespace shardlab {
int bench_main(const std::vector<std::string>& args);
}
