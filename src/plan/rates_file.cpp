// plan/rates_file.cpp — reading `plan --calibrate`'s rates (see rates_file.h).
#include "plan/rates_file.h"

#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace shardlab::plan {

StepRates read_rates_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("cannot read --rates " + path);
  std::stringstream text;
  text << in.rdbuf();
  StepRates r;
  try {
    const nlohmann::json j = nlohmann::json::parse(text.str());
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
  if (!(r.gpu_flops > 0 && r.intra_bytes_per_s > 0 && r.latency_s >= 0 && r.update_s_per_param >= 0 &&
        r.gpu_flops_flash >= 0 && std::isfinite(r.gpu_flops) && std::isfinite(r.intra_bytes_per_s) &&
        std::isfinite(r.latency_s) && std::isfinite(r.update_s_per_param) && std::isfinite(r.gpu_flops_flash) &&
        std::isfinite(r.gpu_flops_alone) && std::isfinite(r.gpu_flops_flash_alone)))
    throw std::invalid_argument("--rates " + path +
                                ": gpu_flops and bytes_per_s must be positive; latency_s, update_s_per_param and "
                                "gpu_flops_flash ≥ 0");
  return r;
}

}  // namespace shardlab::plan
