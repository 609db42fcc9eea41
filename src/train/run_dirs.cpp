// Claiming a run's output directories (see run_dirs.h).
#include "train/run_dirs.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "io/checkpoint.h"
#include "io/loss_log.h"

namespace shardlab {

namespace fs = std::filesystem;

const std::vector<std::string> kRunOutputFiles = {"config.json", "config.toml", "loss.csv",
                                                  "loss.svg",    "ledger.json", "trace.json"};

std::string new_run_id() {
  std::time_t now = std::time(nullptr);
  char when[32];
  std::strftime(when, sizeof when, "%Y%m%d-%H%M%S", std::localtime(&now));
  std::random_device rd;
  const unsigned long long r = (static_cast<unsigned long long>(rd()) << 16) ^ rd();
  char id[64];
  std::snprintf(id, sizeof id, "%s-%012llx", when, r & 0xffffffffffffULL);
  return id;
}

namespace {

nlohmann::json read_json(const fs::path& p) {
  std::ifstream f(p);
  return f ? nlohmann::json::parse(f, nullptr, false) : nlohmann::json();
}

std::string run_id_in(const nlohmann::json& j) {
  return j.is_object() && j.contains("run_id") && j["run_id"].is_string() ? j["run_id"].get<std::string>() : "";
}

bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  return fs::exists(a, ec) && fs::exists(b, ec) && fs::equivalent(a, b, ec);
}

const char* kHow = "give a new directory, or --overwrite to replace them";

// --out DIR: "" if the run may write its files there.
std::string check_out(const TrainConfig& cfg, int64_t resume_step) {
  const fs::path dir(cfg.out);
  std::vector<std::string> present;
  for (const std::string& f : kRunOutputFiles)
    if (fs::exists(dir / f)) present.push_back(f);
  if (present.empty()) return "";
  const std::string owner = run_id_in(read_json(dir / "config.json"));
  if (owner.empty())
    return "--out " + cfg.out + " holds " + present.front() +
           " that no shardlab run wrote (no config.json with a run id); shardlab never replaces it: give a new "
           "directory";
  if (cfg.overwrite) return "";
  int64_t last = 0;
  try {
    LossTable t = read_loss_csv((dir / "loss.csv").string());
    if (!t.rows.empty()) last = static_cast<int64_t>(t.rows.back()[0]);
  } catch (const std::exception&) {}
  if (owner == cfg.run_id && last <= resume_step) return "";  // this run, continued
  const std::string what =
      "the files of " + std::string(owner == cfg.run_id ? "this run up to step " : "run ") +
      (owner == cfg.run_id ? std::to_string(last) : owner + " (" + std::to_string(last) + " steps)");
  return "--out " + cfg.out + " holds " + what +
         (owner == cfg.run_id ? ", after the step this resume starts from (" + std::to_string(resume_step) + ")" : "") +
         "; " + kHow;
}

// --save DIR: "" if the run may save checkpoints there.
std::string check_save(const TrainConfig& cfg, int64_t resume_step) {
  const fs::path dir(cfg.save);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return "";
  // Anything named like a checkpoint that is not one (no meta.json) was not written by shardlab.
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const bool leftover =
        name.size() > 4 && (name.substr(name.size() - 4) == ".tmp" || name.substr(name.size() - 4) == ".old");
    if (name.rfind("step_", 0) == 0 && !leftover && !fs::exists(e.path() / "meta.json", ec))
      return "--save " + cfg.save + " holds " + name + ", which is not a shardlab checkpoint; give a new directory";
  }
  const std::vector<int64_t> steps = checkpoint_steps(cfg.save);
  if (steps.empty()) return "";
  if (cfg.overwrite) return "";
  const std::string owner = run_id_in(read_json(dir / step_dir_name(steps.back()) / "meta.json"));
  if (owner == cfg.run_id && steps.back() <= resume_step) return "";  // this run, continued
  if (owner == cfg.run_id)
    return "--save " + cfg.save + " holds checkpoints of this run up to step " + std::to_string(steps.back()) +
           ", after the step this resume starts from (" + std::to_string(resume_step) + "), which it would replace; " +
           kHow;
  return "--save " + cfg.save + " holds the checkpoints of another run (steps " + std::to_string(steps.front()) + ".." +
         std::to_string(steps.back()) + "); " + kHow;
}

}  // namespace

std::string checkpoint_run_id(const std::string& dir_or_step) {
  fs::path p(dir_or_step);
  if (!fs::exists(p / "meta.json")) {
    std::string latest;
    std::ifstream(p / "latest") >> latest;
    p /= latest;
  }
  return run_id_in(read_json(p / "meta.json"));
}

std::string RunDirs::claim(const TrainConfig& cfg, int64_t resume_step, const std::vector<std::string>& inputs) {
  for (const std::string& in : inputs)
    for (const std::string& f : kRunOutputFiles)
      if (!cfg.out.empty() && same_file(in, fs::path(cfg.out) / f))
        return "'" + in + "' is an input of this run and --out " + cfg.out + " would replace it; give another --out";
  const std::pair<const std::string*, std::string (*)(const TrainConfig&, int64_t)> dirs[] = {{&cfg.out, check_out},
                                                                                              {&cfg.save, check_save}};
  // Checked before anything is created (a refused run leaves no trace), then locked, then checked again
  // under the lock (another run may have written in between).
  for (const auto& [dir, check] : dirs)
    if (!dir->empty())
      if (std::string why = check(cfg, resume_step); !why.empty()) return why;
  for (const auto& [dir, check] : dirs) {
    if (dir->empty()) continue;
    if (!(dir == &cfg.save && same_file(cfg.save, cfg.out))) {  // one lock per directory
      locks_.emplace_back();
      if (std::string why = locks_.back().acquire(*dir); !why.empty()) return why;
    }
    if (std::string why = check(cfg, resume_step); !why.empty()) return why;
  }
  return "";
}

}  // namespace shardlab
