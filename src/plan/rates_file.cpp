// plan/rates_file.cpp — reading `plan --calibrate`'s rates and the bounds every rate is held to (see rates_file.h).
#include "plan/rates_file.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/paths.h"
#include "io/json_file.h"

namespace shardlab::plan {

namespace {
std::string number(double x) {
  char s[32];
  std::snprintf(s, sizeof s, "%.4g", x);
  return s;
}
}  // namespace

std::string rate_problem(const std::string& name, double value, const RateBounds& b, double scale,
                         const std::string& unit) {
  if (std::isfinite(value) && value * scale >= b.lo && value * scale <= b.hi) return "";
  return name + " = " + number(value) + " is not in [" + number(b.lo / scale) + ", " + number(b.hi / scale) + "] " +
         (unit.empty() ? b.unit : unit);
}

std::string rates_problem(const StepRates& r) {
  for (const std::string& why :
       {rate_problem("gpu_flops", r.gpu_flops, kFlopRate), rate_problem("bytes_per_s", r.intra_bytes_per_s, kLinkRate),
        rate_problem("inter-node bytes_per_s", r.inter_bytes_per_s, kLinkRate),
        rate_problem("latency_s", r.latency_s, kLatency),
        rate_problem("update_s_per_param", r.update_s_per_param, kUpdatePerParam),
        r.gpu_flops_flash == 0 ? "" : rate_problem("gpu_flops_flash", r.gpu_flops_flash, kFlopRate),
        r.gpu_flops_alone == 0 ? "" : rate_problem("alone.gpu_flops", r.gpu_flops_alone, kFlopRate),
        r.gpu_flops_flash_alone == 0 ? "" : rate_problem("alone.gpu_flops_flash", r.gpu_flops_flash_alone, kFlopRate)})
    if (!why.empty()) return why;
  return "";
}

StepRates read_rates_file(const std::string& path) {
  std::string text;
  try {
    text = read_file(path, size_t(1) << 20);  // a rates file is a few hundred bytes
  } catch (const std::exception& e) {
    throw std::invalid_argument("--rates: " + std::string(e.what()));
  }
  nlohmann::json j;
  try {
    j = parse_json_text(text, "--rates '" + path + "'");
  } catch (const std::exception& e) {
    throw std::invalid_argument(e.what());
  }
  StepRates r;
  try {
    r.gpu_flops = j.at("gpu_flops").get<double>();
    r.intra_bytes_per_s = r.inter_bytes_per_s = j.at("bytes_per_s").get<double>();
    r.latency_s = j.at("latency_s").get<double>();
    // Files written before the update was timed apart: their FLOP rate already includes it.
    r.update_s_per_param = j.value("update_s_per_param", 0.0);
    r.gpu_flops_flash = j.value("gpu_flops_flash", 0.0);  // 0: flash at gpu_flops
    if (j.contains("alone")) {                            // one rank on idle cores
      r.gpu_flops_alone = j.at("alone").value("gpu_flops", 0.0);
      r.gpu_flops_flash_alone = j.at("alone").value("gpu_flops_flash", 0.0);
    }
  } catch (const std::exception& e) {
    throw std::invalid_argument("--rates " + path + " is not a rates file of `plan --calibrate` (" + e.what() + ")");
  }
  if (const std::string why = rates_problem(r); !why.empty())
    throw std::invalid_argument("--rates " + path + ": " + why);
  return r;
}

}  // namespace shardlab::plan
