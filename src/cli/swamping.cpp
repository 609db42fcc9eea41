// `shardlab swamping [--weight W --update U --steps N]`: claim C2 in numbers. One weight receives
// the same small update many times:
//   bf16 direct   w = bf16(w + u)        (what --master none does)
//   fp32 master   m = m + u, w = bf16(m) (what --mixed bf16 does)
// Once |u| is below half a bf16 spacing of w, bf16 direct rounds every update away.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "cli/command.h"
#include "core/bf16.h"

namespace shardlab {

int swamping_command(const CommandArgs& args, const Runtime& rt) {
  double weight = 1.0, update = 1e-3;
  int steps_flag = 100;
  Flags flags("shardlab swamping",
              "Why bf16 weights need an fp32 master copy (claim C2): one weight, many small updates.");
  flags.add("--weight", weight, "the weight's starting value");
  flags.add("--update", update, "what every step adds to it");
  flags.add("--steps", steps_flag, "how many updates", 1, 100000000);
  if (int rc = parse_command(flags, args, rt, "shardlab swamping"); rc >= 0) return rc;
  if (!rt.is_root()) return 0;
  const long steps = steps_flag;
  // Everything must stay a finite bf16/float: the largest bf16 is about 3.39e38.
  if (!(std::fabs(weight) + steps * std::fabs(update) < 1e38))
    throw std::invalid_argument(
        "--weight and --steps × --update must stay below 1e38 in size (bf16 and float overflow there)");
  const float spacing = std::fabs(from_bf16(to_bf16(float(weight)) + 1) - from_bf16(to_bf16(float(weight))));
  std::printf("weight %g gets +%g per step. bf16 spacing at this weight: %g (7 mantissa bits), half of it %g.\n",
              weight, update, spacing, spacing / 2);
  std::printf("%8s  %14s  %14s  %14s  %14s\n", "step", "exact", "bf16 direct", "fp32 master", "bf16(master)");
  bf16 direct = to_bf16(float(weight));
  float master = float(weight);
  const long every = std::max(1L, steps / 8);
  for (long s = 1; s <= steps; ++s) {
    direct = to_bf16(from_bf16(direct) + float(update));
    master += float(update);
    if (s % every == 0 || s == steps)
      std::printf("%8ld  %14.8f  %14.8f  %14.8f  %14.8f\n", s, weight + s * update, from_bf16(direct), master,
                  round_bf16(master));
  }
  std::printf("result: exact=%.9g bf16_direct=%.9g fp32_master=%.9g\n", weight + steps * update, from_bf16(direct),
              master);
  return 0;
}

}  // namespace shardlab
