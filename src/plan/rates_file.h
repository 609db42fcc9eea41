// plan/rates_file.h — the machine's rates as `plan --calibrate` writes them (rates.json: gpu_flops, bytes_per_s,
// latency_s, update_s_per_param, gpu_flops_flash — one link, the ranks of one machine), read into the step-time model's
// StepRates for `plan --predict` and `plan --search` (--rates FILE), and the one rule of what a rate may be: every rate
// a step is priced at, from a file, a flag or a calibration, lies within the bounds below, so that every time printed
// is a plain number (no "-nan", no 300 digits).
#pragma once
#include <string>

#include "plan/step_time.h"

namespace shardlab::plan {

// What a rate may be, in its own unit. A rate outside is not a machine (1e-300 FLOP/s, a link of 1e300 B/s).
struct RateBounds {
  const char* unit;
  double lo, hi;
};
constexpr RateBounds kFlopRate{"FLOP/s", 1e6, 1e18};               // a slow core … far beyond any accelerator
constexpr RateBounds kLinkRate{"bytes/s", 1e3, 1e15};              // a modem … far beyond any link
constexpr RateBounds kLatency{"s", 0, 1};                          // α per message
constexpr RateBounds kUpdatePerParam{"s per parameter", 0, 1e-3};  // the optimizer's work per parameter

// "" when value lies in b, else "NAME = VALUE is not in [lo, hi] UNIT" (NAME as the reader knows it: a key or a flag;
// scale: VALUE and the bounds in the flag's unit, e.g. 1e12 for TFLOPS).
std::string rate_problem(const std::string& name, double value, const RateBounds& b, double scale = 1,
                         const std::string& unit = "");
// The first rate of r outside its bounds (keys as rates.json names them), or "".
std::string rates_problem(const StepRates& r);

// Throws std::invalid_argument with one line saying what is wrong with the file (read through core/paths.h: a FIFO,
// a device or a file larger than a rates file is refused before it is read).
StepRates read_rates_file(const std::string& path);

}  // namespace shardlab::plan
