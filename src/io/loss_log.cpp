// Writing and reading loss.csv (see loss_log.h).
#include "io/loss_log.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "core/paths.h"

namespace shardlab {

static const char* kHeader = "step,loss,grad_norm,lr,ms,val_loss\n";

LossLog::LossLog(const std::string& path, bool f64, int resume_step) : fmt_(f64 ? "%.17g" : "%.9g") {
  std::string kept = kHeader;
  if (resume_step > 0) {
    std::ifstream in(path);
    std::string line;
    if (in && std::getline(in, line)) {
      kept = line + "\n";
      while (std::getline(in, line))
        if (!line.empty() && std::atoi(line.c_str()) <= resume_step) kept += line + "\n";
    }
  }
  std::string tmp = path + ".tmp";
  std::FILE* t = std::fopen(tmp.c_str(), "w");
  if (!t || std::fputs(kept.c_str(), t) < 0 || std::fclose(t) != 0 || std::rename(tmp.c_str(), path.c_str()) != 0)
    throw std::runtime_error("cannot write " + path);
  f_ = std::fopen(path.c_str(), "a");
  if (!f_) throw std::runtime_error("cannot append to " + path);
}

LossLog::~LossLog() {
  if (f_) std::fclose(f_);
}

void LossLog::row(int step, double loss, double grad_norm, double lr, double ms, std::optional<double> val_loss) {
  std::fprintf(f_, "%d,", step);
  std::fprintf(f_, fmt_, loss);
  std::fputc(',', f_);
  std::fprintf(f_, fmt_, grad_norm);
  std::fprintf(f_, ",%.17g,%.3f,", lr, ms);
  if (val_loss) std::fprintf(f_, fmt_, *val_loss);
  std::fputc('\n', f_);
  std::fflush(f_);
}

int LossTable::column(const std::string& name) const {
  for (size_t i = 0; i < columns.size(); ++i)
    if (columns[i] == name) return static_cast<int>(i);
  return -1;
}

LossTable read_loss_csv(const std::string& path) {
  if (std::string why = input_file_problem(path); !why.empty())
    throw std::runtime_error(why + " (is it a run directory written with --out?)");
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read '" + path + "' (is it a run directory written with --out?)");
  LossTable t;
  std::string line, cell;
  if (!std::getline(in, line)) throw std::runtime_error("'" + path + "' is empty");
  std::stringstream h(line);
  while (std::getline(h, cell, ',')) t.columns.push_back(cell);
  if (t.column("step") != 0 || t.column("loss") < 0)
    throw std::runtime_error("'" + path + "' is not a loss.csv (no step,loss header)");
  int lineno = 1;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty()) continue;
    std::vector<double> row;
    std::stringstream s(line);
    while (std::getline(s, cell, ',')) {
      if (cell.empty()) {
        row.push_back(NAN);
        continue;
      }
      char* end = nullptr;
      double v = std::strtod(cell.c_str(), &end);
      if (*end)
        throw std::runtime_error("'" + path + "' line " + std::to_string(lineno) + ": '" + cell + "' is not a number");
      row.push_back(v);
    }
    while (row.size() < t.columns.size()) row.push_back(NAN);
    t.rows.push_back(row);
  }
  return t;
}

}  // namespace shardlab
