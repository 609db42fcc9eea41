// `shardlab ring`: the ring all-reduce on its own (claim C8), run under mpirun.
#pragma once
#include <string>
#include <vector>

#include "comm/runtime.h"

namespace shardlab {
int ring_main(const std::vector<std::string>& args, const Runtime& rt);
}
