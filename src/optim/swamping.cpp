// The swamping demonstration (see swamping.h).
#include "optim/swamping.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "core/bf16.h"

namespace shardlab {

int swamping_main(const std::vector<std::string>& args) {
  double weight = 1.0, update = 1e-3;
  long steps = 100;
  for (size_t i = 0; i < args.size(); ++i) {
    if (i + 1 >= args.size()) throw std::invalid_argument(args[i] + " needs a value");
    const std::string& v = args[i + 1];
    char* end = nullptr;
    if (args[i] == "--weight") weight = std::strtod(v.c_str(), &end);
    else if (args[i] == "--update") update = std::strtod(v.c_str(), &end);
    else if (args[i] == "--steps") steps = std::strtol(v.c_str(), &end, 10);
    else throw std::invalid_argument("unknown flag " + args[i] + " (flags: --weight W --update U --steps N)");
    if (*end) throw std::invalid_argument(args[i] + " expects a number, got '" + v + "'");
    ++i;
  }
  if (steps <= 0 || steps > 100000000) throw std::invalid_argument("--steps must be in 1..1e8");
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
