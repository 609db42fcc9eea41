// Claiming a run's output directories (see run_dirs.h).
#include "train/run_dirs.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "core/paths.h"
#include "io/checkpoint.h"
#include "io/json_file.h"
#include "io/loss_log.h"
#include "io/owned_files.h"

namespace shardlab {

namespace fs = std::filesystem;

const std::vector<std::string> kRunOutputFiles = {"config.json",  "config.toml",  "loss.csv",
                                                  "loss.svg",     "ledger.json",  "trace.json",
                                                  "schedule.svg", "moe_load.csv", "moe_load.svg"};

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

// A small JSON file shardlab wrote (config.json, meta.json); null when unreadable or not JSON.
nlohmann::json read_json(const fs::path& p) {
  try {
    return parse_json_or_discarded(read_file(p.string(), size_t(1) << 24));
  } catch (const std::exception&) {
    return nlohmann::json();
  }
}

std::string run_id_in(const nlohmann::json& j) {
  return j.is_object() && j.contains("run_id") && j["run_id"].is_string() ? j["run_id"].get<std::string>() : "";
}

bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  return fs::exists(a, ec) && fs::exists(b, ec) && fs::equivalent(a, b, ec);
}

// Is `inner` the directory `outer` or inside it (after resolving what exists)?
bool inside(const fs::path& inner, const fs::path& outer) {
  std::error_code ec;
  const fs::path a = fs::weakly_canonical(fs::absolute(inner), ec), b = fs::weakly_canonical(fs::absolute(outer), ec);
  auto ai = a.begin(), bi = b.begin();
  for (; bi != b.end() && !bi->empty(); ++ai, ++bi)
    if (ai == a.end() || *ai != *bi) return false;
  return true;
}

const char* kHow = "give a new directory, or --overwrite to replace them";

// Does this run write file F of kRunOutputFiles into --out?
bool run_writes(const TrainConfig& cfg, const std::string& f) {
  if (f == "trace.json") return cfg.outputs.trace;
  if (f == "schedule.svg") return cfg.layout.pp > 1;
  if (f == "moe_load.csv" || f == "moe_load.svg") return cfg.model.moe.on();
  return true;
}

// --out DIR: "" if the run may write its files there. Every file the run writes must be absent or still the
// bytes shardlab wrote (io/owned_files.h); one it does not write is removed at the start if shardlab wrote
// it (it would not match the new ledger.json) and left alone if somebody else did.
std::string check_out(const TrainConfig& cfg, int64_t resume_step) {
  const fs::path dir(cfg.outputs.out);
  std::error_code ec;
  if (std::string why = owned_record_problem(cfg.outputs.out); !why.empty())
    return "--out " + cfg.outputs.out + ": " + why + "; shardlab never replaces it: give a new directory";
  std::vector<std::string> present;
  for (const std::string& f : kRunOutputFiles) {
    if (!fs::exists(dir / f, ec) && !fs::is_symlink(dir / f, ec)) continue;
    if (std::string why = owned_file_problem((dir / f).string(), f == "loss.csv" || f == "moe_load.csv");
        !why.empty()) {
      if (!run_writes(cfg, f)) continue;  // not this run's to write, nor shardlab's to remove
      return "--out " + cfg.outputs.out + ": " + why + "; shardlab never replaces it, --overwrite or not: give a new " +
             "directory or move the file away";
    }
    present.push_back(f);
  }
  if (present.empty()) return "";
  const nlohmann::json config = read_json(dir / "config.json");
  if (cfg.outputs.overwrite) return "";
  const std::string owner = run_id_in(config);
  int64_t last = 0;
  try {
    LossTable t = read_loss_csv((dir / "loss.csv").string());
    if (!t.rows.empty()) last = static_cast<int64_t>(t.rows.back()[0]);
  } catch (const std::exception&) {}
  const bool mine = !owner.empty() && owner == cfg.run_id;
  if (mine && last <= resume_step) return "";  // this run, continued
  const std::string what =
      "the files of " + std::string(mine ? "this run up to step " : "run ") +
      (mine ? std::to_string(last) : (owner.empty() ? "?" : owner) + " (" + std::to_string(last) + " steps)");
  return "--out " + cfg.outputs.out + " holds " + what +
         (mine ? ", after the step this resume starts from (" + std::to_string(resume_step) + ")" : "") + "; " + kHow;
}

// --save DIR: "" if the run may save checkpoints there.
std::string check_save(const TrainConfig& cfg, int64_t resume_step) {
  const fs::path dir(cfg.outputs.save);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return "";
  // Everything that looks like a checkpoint must be one of shardlab's, holding only its own files:
  // those are the only things a save or --keep-last ever replaces or removes.
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const int64_t step = step_of_dir_name(name);  // only step_NNNNNN and step_NNNNNN.old are ever replaced
    if (step < 0 || (name != step_dir_name(step) && name != step_dir_name(step) + ".old")) continue;
    if (!is_own_checkpoint(e.path().string()))
      return "--save " + cfg.outputs.save + " holds " + name +
             ", which is not (only) a shardlab checkpoint; shardlab never replaces it: give a new directory";
  }
  std::string latest;
  try {
    latest = read_latest(cfg.outputs.save);
  } catch (const std::runtime_error& e) {
    return "--save " + cfg.outputs.save + ": " + e.what() + "; give a new directory";
  }
  std::vector<int64_t> steps = checkpoint_steps(cfg.outputs.save);
  for (const auto& e : fs::directory_iterator(dir, ec)) {  // a step that survives only as NAME.old counts too
    const std::string name = e.path().filename().string();
    if (name.size() > 4 && name.substr(name.size() - 4) == ".old" && step_of_dir_name(name) >= 0)
      steps.push_back(step_of_dir_name(name));
  }
  if (steps.empty() && latest.empty()) return "";
  if (cfg.outputs.overwrite) return "";
  std::sort(steps.begin(), steps.end());
  std::string owner;
  try {
    owner = run_id_in(read_json(fs::path(resolve_step_dir(cfg.outputs.save)) / "meta.json"));
  } catch (const std::exception&) {}
  const int64_t newest = steps.empty() ? 0 : steps.back();
  const bool mine = !owner.empty() && owner == cfg.run_id;
  if (mine && newest <= resume_step) return "";  // this run, continued
  if (mine)
    return "--save " + cfg.outputs.save + " holds checkpoints of this run up to step " + std::to_string(newest) +
           ", after the step this resume starts from (" + std::to_string(resume_step) + "), which it would replace; " +
           kHow;
  return "--save " + cfg.outputs.save + " holds the checkpoints of another run (steps " +
         (steps.empty() ? std::string("?") : std::to_string(steps.front()) + ".." + std::to_string(newest)) + "); " +
         kHow;
}

}  // namespace

std::string checkpoint_run_id(const std::string& dir_or_step) {
  return run_id_in(read_json(fs::path(resolve_step_dir(dir_or_step)) / "meta.json"));
}

std::string RunDirs::claim(const TrainConfig& cfg, int64_t resume_step, const std::vector<std::string>& inputs) {
  for (const std::string& in : inputs) {
    if (in.empty()) continue;
    for (const std::string& f : kRunOutputFiles)
      if (!cfg.outputs.out.empty() && same_file(in, fs::path(cfg.outputs.out) / f))
        return "'" + in + "' is an input of this run and --out " + cfg.outputs.out +
               " would replace it; give another --out";
    if (!cfg.outputs.save.empty() && inside(in, cfg.outputs.save))
      return "'" + in + "' is an input of this run inside --save " + cfg.outputs.save +
             ", whose checkpoints the run replaces and prunes; keep inputs elsewhere";
  }
  if (!cfg.outputs.out.empty() && !cfg.outputs.save.empty() && !same_file(cfg.outputs.out, cfg.outputs.save) &&
      inside(cfg.outputs.out, cfg.outputs.save))
    return "--out " + cfg.outputs.out + " is inside --save " + cfg.outputs.save +
           ", which holds only checkpoints; give another --out";
  const std::pair<const std::string*, std::string (*)(const TrainConfig&, int64_t)> dirs[] = {
      {&cfg.outputs.out, check_out}, {&cfg.outputs.save, check_save}};
  // Locked first, then checked: a run that finds another one writing there says so, instead of judging the files
  // the live run is writing (its loss.csv growing, its checkpoints) as another run's. A refused claim leaves no
  // trace: the directories and lock files it created are removed again.
  std::vector<fs::path> created;
  auto refuse = [&](const std::string& why) {
    for (DirectoryLock& lock : locks_) lock.abandon();
    locks_.clear();
    std::sort(created.begin(), created.end(), [](const fs::path& a, const fs::path& b) {
      return a.string().size() > b.string().size();  // the deepest first: a directory holds what was made in it
    });
    std::error_code ec;
    for (const fs::path& p : created) fs::remove(p, ec);  // only if empty: never anything else
    return why;
  };
  for (const auto& [dir, check] : dirs) {
    if (dir->empty() || (dir == &cfg.outputs.save && same_file(cfg.outputs.save, cfg.outputs.out)))
      continue;  // one lock per directory
    std::error_code ec;
    for (fs::path p = fs::absolute(*dir); !p.empty() && !fs::exists(p, ec); p = p.parent_path()) created.push_back(p);
    locks_.emplace_back();
    if (std::string why = locks_.back().acquire(*dir); !why.empty()) return refuse(why);
  }
  for (const auto& [dir, check] : dirs)
    if (!dir->empty())
      if (std::string why = check(cfg, resume_step); !why.empty()) return refuse(why);
  return "";
}

}  // namespace shardlab
