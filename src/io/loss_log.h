// loss.csv: one row per optimizer step — step, loss, grad_norm, lr, ms, val_loss, then a run's own columns
// (a model with experts: aux_loss, z_loss, imbalance, dropped; train/moe_load.h) — with numbers
// printed to round-trip exactly (%.17g for f64 runs, %.9g for f32; lr always %.17g). ms is wall
// clock and the only column that differs between two identical runs. val_loss is empty on steps
// without an evaluation. Rows are flushed as they are written, so a crash keeps what was logged; a row
// that cannot be written (a full disk) is an error, never a silent gap, and the file is cut back to the
// last whole row, so that it stays a log every reader takes. A file that still ends inside a row (written
// by an older shardlab, or cut by a crash of the machine) is read up to that row, which the reader names.
#pragma once
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace shardlab {

class LossLog {
 public:
  // Opens DIR/loss.csv. When resuming at `resume_step` > 0, keeps the rows with step ≤ resume_step
  // of an existing file and appends after them; otherwise starts a new file. extra: the run's own columns.
  // header: another per-step log's columns (the same keeping and appending; rows through line()).
  LossLog(const std::string& path, bool f64, int resume_step, const std::vector<std::string>& extra = {},
          const std::string& header = "");
  ~LossLog();
  LossLog(const LossLog&) = delete;
  LossLog& operator=(const LossLog&) = delete;
  void row(int step, double loss, double grad_norm, double lr, double ms, std::optional<double> val_loss,
           const std::vector<double>& extra = {});
  // One row of a log opened with its own header: `step` names it in an error.
  void line(int step, const std::string& text);
  const char* number_format() const { return fmt_; }

 private:
  std::string path_;
  std::FILE* f_ = nullptr;
  long whole_ = 0;  // bytes of the file up to its last whole row
  const char* fmt_;
  void flush(int step);
};

// Reads a loss.csv: the header names and one row of doubles per step (NaN for empty cells).
struct LossTable {
  std::vector<std::string> columns;
  std::vector<std::vector<double>> rows;
  // "" or, when the file ends inside its last row (no line break after it), which row that is and what was kept:
  // "'D/loss.csv' line 302 ends inside its row (…); read its 300 whole rows" — for the reader to print as a warning.
  std::string torn;
  int column(const std::string& name) const;  // -1 if absent
};
LossTable read_loss_csv(const std::string& path);  // throws std::runtime_error with a clear message

}  // namespace shardlab
