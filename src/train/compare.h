// `shardlab compare`: per-step loss comparison of two runs (see compare.cpp).
#pragma once
#include <string>
#include <vector>

namespace shardlab {
int compare_main(const std::vector<std::string>& args);  // throws std::invalid_argument / runtime_error on bad input
}
