// Learning rate at optimizer step `step` (1-based): linear warmup over `warmup` steps, then
// constant or cosine decay to lr·min_ratio at the last step.
#pragma once
#include <cmath>

namespace shardlab {

inline double learning_rate(int step, int total_steps, double lr, int warmup, bool cosine, double min_ratio) {
  if (warmup > 0 && step <= warmup) return lr * step / warmup;
  if (!cosine) return lr;
  const int span = total_steps - warmup;
  if (span <= 0) return lr;
  double progress = double(step - warmup) / span;  // (0, 1]
  double floor = lr * min_ratio;
  return floor + 0.5 * (lr - floor) * (1.0 + std::cos(3.14159265358979323846 * progress));
}

}  // namespace shardlab
