// Writing and reading loss.csv (see loss_log.h).
#include "io/loss_log.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <unistd.h>

#include "core/paths.h"
#include "io/owned_files.h"

namespace shardlab {

static const char* kHeader = "step,loss,grad_norm,lr,ms,val_loss";

LossLog::LossLog(const std::string& path, bool f64, int resume_step, const std::vector<std::string>& extra,
                 const std::string& header)
    : path_(path), fmt_(f64 ? "%.17g" : "%.9g") {
  std::string kept = header.empty() ? kHeader : header;
  for (const std::string& c : extra) kept += "," + c;
  kept += "\n";
  if (resume_step > 0 && input_file_problem(path).empty()) {  // continuing this run's own log
    std::istringstream in(read_file(path));
    std::string line;
    if (std::getline(in, line)) {
      kept = line + "\n";
      while (std::getline(in, line))  // a last row without its line break was cut short: not kept
        if (!line.empty() && !in.eof() && std::atoi(line.c_str()) <= resume_step) kept += line + "\n";
    }
  }
  write_owned_file(path, kept, true);
  f_ = std::fopen(path.c_str(), "a");
  if (!f_) throw std::runtime_error("cannot append to " + path + ": " + std::strerror(errno));
  whole_ = static_cast<long>(kept.size());
}

LossLog::~LossLog() {
  if (!f_) return;
  std::fclose(f_);
  try {
    record_owned_file(path_);  // the rows appended since it was opened are shardlab's too
  } catch (const std::exception&) {
    // unrecorded rows still count as shardlab's: they follow the recorded bytes (io/owned_files.h)
  }
}

void LossLog::row(int step, double loss, double grad_norm, double lr, double ms, std::optional<double> val_loss,
                  const std::vector<double>& extra) {
  std::fprintf(f_, "%d,", step);
  std::fprintf(f_, fmt_, loss);
  std::fputc(',', f_);
  std::fprintf(f_, fmt_, grad_norm);
  std::fprintf(f_, ",%.17g,%.3f,", lr, ms);
  if (val_loss) std::fprintf(f_, fmt_, *val_loss);
  for (double v : extra) {
    std::fputc(',', f_);
    std::fprintf(f_, fmt_, v);
  }
  std::fputc('\n', f_);
  flush(step);
}

void LossLog::line(int step, const std::string& text) {
  std::fputs((text + "\n").c_str(), f_);
  flush(step);
}

void LossLog::flush(int step) {
  // A full disk (or any write error) stops the run: a loss.csv that silently lost rows would lie. What reached the
  // file of the row that failed is cut off again, so the rows kept are whole (truncating frees space: it works on a
  // full disk).
  if (std::fflush(f_) != 0 || std::ferror(f_)) {
    const std::string why = std::strerror(errno);
    const bool cut = ::ftruncate(::fileno(f_), whole_) == 0;
    std::fclose(f_);
    f_ = std::fopen(path_.c_str(), "a");  // the rows kept stay shardlab's (recorded when the log closes)
    throw std::runtime_error(
        "cannot write " + path_ + " (" + why + "); the rows before step " + std::to_string(step) +
        (cut ? " are kept, whole" : " are kept, and the row of step " + std::to_string(step) + " may be cut short"));
  }
  whole_ = std::ftell(f_);
}

int LossTable::column(const std::string& name) const {
  for (size_t i = 0; i < columns.size(); ++i)
    if (columns[i] == name) return static_cast<int>(i);
  return -1;
}

LossTable read_loss_csv(const std::string& path) {
  std::string text;
  try {
    text = read_file(path);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(std::string(e.what()) + " (is it a run directory written with --out?)");
  }
  auto bad = [&](int lineno, const std::string& why) {
    return std::runtime_error("'" + path + "' line " + std::to_string(lineno) + ": " + why);
  };
  std::istringstream in(text);
  LossTable t;
  std::string line, cell;
  auto next_line = [&]() {
    if (!std::getline(in, line)) return false;
    if (!line.empty() && line.back() == '\r') line.pop_back();  // written on another system
    return true;
  };
  if (!next_line()) throw std::runtime_error("'" + path + "' is empty");
  std::stringstream h(line);
  while (std::getline(h, cell, ',')) t.columns.push_back(cell);
  if (t.column("step") != 0 || t.column("loss") < 0)
    throw std::runtime_error("'" + path + "' is not a loss.csv (no step,loss header)");
  const int loss = t.column("loss");
  int lineno = 1;
  double previous = 0;
  while (next_line()) {
    ++lineno;
    if (line.empty()) continue;
    if (in.eof() && text.back() != '\n') {  // the last row has no line break: its writer stopped inside it
      t.torn = "'" + path + "' line " + std::to_string(lineno) + " (\"" + line.substr(0, 60) +
               (line.size() > 60 ? "…" : "") + "\") ends inside its row, without a line break (a write cut short: a " +
               "full disk or a crash); read the " + std::to_string(t.rows.size()) + " whole rows before it";
      break;
    }
    std::vector<double> row;
    std::stringstream s(line + ",");  // the trailing comma keeps an empty last cell
    while (std::getline(s, cell, ',')) {
      if (cell.empty()) {
        row.push_back(NAN);  // a step without an evaluation
        continue;
      }
      char* end = nullptr;
      double v = std::strtod(cell.c_str(), &end);
      if (*end) throw bad(lineno, "'" + cell + "' is not a number");
      row.push_back(v);
    }
    if (row.size() != t.columns.size())
      throw bad(lineno, std::to_string(row.size()) + " cells for " + std::to_string(t.columns.size()) + " columns");
    // Steps are positive integers in increasing order, losses finite: anything else is not a training log.
    if (!(row[0] >= 1 && row[0] == std::floor(row[0]) && row[0] < 1e15))
      throw bad(lineno, "step '" + line.substr(0, line.find(',')) + "' is not a positive integer");
    if (row[0] <= previous)
      throw bad(lineno, "step " + std::to_string(int64_t(row[0])) + " does not follow the previous one");
    if (!std::isfinite(row[loss])) throw bad(lineno, "the loss is not a finite number");
    previous = row[0];
    t.rows.push_back(row);
  }
  return t;
}

}  // namespace shardlab
