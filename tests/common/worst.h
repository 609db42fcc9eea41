// Running worst differences in tests, NaN-aware. std::max(worst, x) keeps `worst` when x is NaN (every
// comparison with NaN is false), so a weight that became NaN would pass a comparison built on it; worst_of
// makes NaN the worst of all and keeps it, so `CHECK(worst <= tol)` fails and prints nan. A weight "moved"
// only to a finite value.
#pragma once
#include <algorithm>
#include <cmath>
#include <limits>

namespace shardlab::test {

inline double worst_of(double worst, double x) {
  return std::isnan(worst) || std::isnan(x) ? std::numeric_limits<double>::quiet_NaN() : std::max(worst, x);
}

inline bool moved(double now, double before) { return std::isfinite(now) && now != before; }

}  // namespace shardlab::test
