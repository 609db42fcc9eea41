// Comparing two runs' curves, the correctness check of every layout: each step both runs logged (matched by
// step number, so a resumed run compares with the uninterrupted one on the steps it ran), both losses and
// their relative difference; the gradient norms and the validation losses (where both runs evaluated) are
// compared the same way; the maximum per column, and a verdict on all of them against the tolerance
// (default 1e-12 when both runs are f64, else 1e-5; 0 demands bit-identical numbers).
#pragma once
#include <string>

namespace shardlab {

// Prints the table and the verdict; returns 0 when every shared step is within rtol (rtol < 0: the
// default for the runs' dtypes), 1 otherwise. Throws std::invalid_argument when the runs share no step,
// std::runtime_error when a loss.csv cannot be read.
int compare_runs(const std::string& ref_dir, const std::string& run_dir, double rtol, bool all_steps);

}  // namespace shardlab
