// Rank 0's view of a run: a live bar on a terminal (or plain lines in a log), with step, loss,
// tokens/s and ETA, and a closing summary. A validation loss appears on the line of the step that computed
// it (the bar keeps the latest, with its step). Only rank 0 constructs one.
#pragma once
#include <chrono>
#include <optional>
#include <string>

#include "core/spelling.h"

namespace shardlab {

// --progress: a bar on a terminal (auto), always a bar, plain lines, or nothing.
enum class ProgressMode { automatic, bar, lines, none };
inline constexpr Spelling<ProgressMode> kProgressWords[] = {{"auto", ProgressMode::automatic},
                                                            {"bar", ProgressMode::bar},
                                                            {"lines", ProgressMode::lines},
                                                            {"none", ProgressMode::none}};

class Progress {
 public:
  // total: last step; first: the step training starts after. unit names what is counted ("step"; "batch"
  // for an evaluation).
  Progress(ProgressMode mode, int first, int total, double tokens_per_step, const std::string& unit = "step");
  void step(int step, double loss, std::optional<double> val_loss);
  void finish();  // ends the bar line
  double tokens_per_second() const;
  double elapsed_seconds() const;

 private:
  bool bar_ = false, quiet_ = false;
  int first_, total_, every_;
  double tokens_per_step_;
  int last_step_ = 0, last_val_step_ = 0;
  std::string unit_;
  std::optional<double> last_val_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace shardlab
