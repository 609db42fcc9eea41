// Progress bar / lines and number formatting (see progress.h).
#include "report/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "report/format.h"

namespace shardlab {

Progress::Progress(ProgressMode mode, int first, int total, double tokens_per_step, const std::string& unit)
    : first_(first),
      total_(total),
      tokens_per_step_(tokens_per_step),
      unit_(unit),
      start_(std::chrono::steady_clock::now()) {
  // Under mpirun a rank's stdout is a pseudo-terminal even when mpirun's own output goes to a file;
  // scripts/mpirun.sh says which (SHARDLAB_STDOUT_TTY=0: not a terminal, plain lines).
  const char* tty = std::getenv("SHARDLAB_STDOUT_TTY");
  bar_ = mode == ProgressMode::bar ||
         (mode == ProgressMode::automatic && isatty(STDOUT_FILENO) && !(tty && std::string(tty) == "0"));
  quiet_ = mode == ProgressMode::none;
  every_ = std::max(1, (total - first) / 10);
}

double Progress::elapsed_seconds() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

double Progress::tokens_per_second() const {
  double s = elapsed_seconds();
  return s > 0 ? (last_step_ - first_) * tokens_per_step_ / s : 0.0;
}

void Progress::step(int step, double loss, std::optional<double> val_loss) {
  last_step_ = step;
  if (val_loss) {
    last_val_ = val_loss;
    last_val_step_ = step;
  }
  if (quiet_) return;
  const double done = step - first_, left = total_ - step;
  const double eta = done > 0 ? elapsed_seconds() / done * left : 0.0;
  // A validation loss is shown with the step that computed it: a line only on that step; the bar, which
  // keeps showing the latest, says its step.
  char val[48] = "";
  if (bar_ && last_val_)
    std::snprintf(val, sizeof val, "  val %.4f @step %d", *last_val_, last_val_step_);
  else if (!bar_ && val_loss)
    std::snprintf(val, sizeof val, "  val %.4f", *val_loss);
  if (bar_) {
    const int width = 24;
    int filled = static_cast<int>(width * double(step) / total_);
    std::string bar(filled, '#');
    bar += std::string(width - filled, '.');
    std::printf("\r[%s] %s %d/%d  loss %.4f%s  %.0f tok/s  ETA %s  ", bar.c_str(), unit_.c_str(), step, total_, loss,
                val, tokens_per_second(), format_duration(eta).c_str());
    std::fflush(stdout);
  } else if (step == first_ + 1 || step % every_ == 0 || step == total_ || val_loss) {
    std::printf("%s %5d/%d  loss %.4f%s  %.0f tok/s  ETA %s\n", unit_.c_str(), step, total_, loss, val,
                tokens_per_second(), format_duration(eta).c_str());
    std::fflush(stdout);
  }
}

void Progress::finish() {
  if (bar_ && !quiet_) std::printf("\n");
}

}  // namespace shardlab
