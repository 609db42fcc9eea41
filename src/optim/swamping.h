// `shardlab swamping`: claim C2 in numbers. One weight receives the same small update many times:
//   bf16 direct   w = bf16(w + u)        (what --master none does)
//   fp32 master   m = m + u, w = bf16(m) (what --mixed bf16 does)
// Once |u| is below half a bf16 spacing of w, bf16 direct rounds every update away.
#pragma once
#include <string>
#include <vector>

namespace shardlab {
int swamping_main(const std::vector<std::string>& args);  // throws std::invalid_argument on bad flags
}
