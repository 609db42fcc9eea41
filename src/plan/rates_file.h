// plan/rates_file.h — the machine's rates as `plan --calibrate` writes them (rates.json: gpu_flops, bytes_per_s,
// latency_s, update_s_per_param, gpu_flops_flash — one link, the ranks of one machine), read into the step-time model's
// StepRates for `plan --predict` and `plan --search` (--rates FILE).
#pragma once
#include <string>

#include "plan/step_time.h"

namespace shardlab::plan {

// Throws std::invalid_argument with one line saying what is wrong with the file.
StepRates read_rates_file(const std::string& path);

}  // namespace shardlab::plan
