// Checkpoint save/load: the directory protocol of checkpoint.h. Ordering is what makes it
// crash-safe: a step is written into a fresh, uniquely named step_NNNNNN.tmp-XXXXXX/, complete and
// fsynced before it is renamed to step_NNNNNN/, and DIR/latest is replaced only after that rename.
// Names ending in .tmp-XXXXXX or .prune-XXXXXX are this code's own scratch (created with O_EXCL /
// mkdtemp, so never someone else's file); nothing else is ever removed unless it is a complete
// checkpoint holding only the files its meta.json lists.
#include "io/checkpoint.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include "core/paths.h"
#include "io/json_file.h"
#include "io/sha256.h"

namespace shardlab {

namespace fs = std::filesystem;

namespace {

std::runtime_error err(const fs::path& path, const std::string& what) {
  return std::runtime_error("checkpoint " + path.string() + ": " + what);
}

// A file or directory name that stays inside its parent directory.
bool is_plain_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

std::vector<uint8_t> read_whole_file(const fs::path& path) {
  try {
    return read_file_bytes(path.string());
  } catch (const std::runtime_error& e) {
    throw err(path, e.what());
  }
}

// A fresh, uniquely named scratch directory next to `final` ("step_000040.tmp-Ab3dE9").
fs::path make_scratch_dir(const fs::path& final) {
  std::string tmpl = final.string() + ".tmp-XXXXXX";
  if (!::mkdtemp(tmpl.data()))
    throw err(final, std::string("cannot create a scratch directory (") + std::strerror(errno) + ")");
  return tmpl;
}

// Scratch of an earlier save that was killed: a step_NNNNNN.tmp-XXXXXX/ or .prune-XXXXXX/ directory
// holding only what a save writes, or a latest.tmp-XXXXXX file. Only one process saves into a
// directory at a time (the run holds its lock), so such scratch is never another save's work in progress.
void remove_stale_scratch(const fs::path& root) {
  std::error_code ec;
  std::vector<fs::path> stale;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    const std::string name = e.path().filename().string();
    if (!is_scratch_name(name) || e.is_symlink(ec)) continue;
    if (name.rfind("latest.tmp-", 0) == 0 && e.is_regular_file(ec)) stale.push_back(e.path());
    if (step_of_dir_name(name) < 0 || !e.is_directory(ec)) continue;
    bool only_ours = true;
    for (const auto& f : fs::recursive_directory_iterator(e.path(), ec)) {
      const std::string n = f.path().filename().string();
      const bool ours = n == "meta.json" || is_scratch_name(n) || step_of_dir_name(n) >= 0 ||
                        (n.size() > 12 && n.substr(n.size() - 12) == ".safetensors");
      if (f.is_symlink(ec) || !ours) only_ours = false;
    }
    if (only_ours && !ec) stale.push_back(e.path());
  }
  for (const fs::path& p : stale) fs::remove_all(p, ec);
}

void write_text_atomic(const fs::path& path, const std::string& text) {
  write_file_atomic(path.string(), {{text.data(), text.size()}});
}

// Writes every file and meta.json into `tmp` (which must exist and be empty).
void write_step_contents(const fs::path& tmp, int64_t step, const std::vector<CheckpointFile>& files,
                         const nlohmann::json& meta) {
  nlohmann::json listing = nlohmann::json::object();
  for (const CheckpointFile& f : files) {
    const fs::path p = tmp / f.filename;
    write_safetensors(p.string(), f.tensors, {{"step", std::to_string(step)}});
    std::error_code ec;
    const uintmax_t bytes = fs::file_size(p, ec);
    if (ec) throw err(p, "cannot stat the file just written (" + ec.message() + ")");
    listing[f.filename] = {{"sha256", sha256_hex_of_file(p.string())}, {"bytes", bytes}};
  }
  nlohmann::json m = meta.is_null() ? nlohmann::json::object() : meta;
  m["format_version"] = kCheckpointFormatVersion;
  m["step"] = step;
  m["files"] = listing;
  write_text_atomic(tmp / "meta.json", m.dump(2) + "\n");
  fsync_directory(tmp.string());
}

}  // namespace

// The step a directory's name states: 40 for "step_000040" (or "step_000040.old"), -1 for other names.
int64_t step_of_dir_name(const std::string& name) {
  if (name.rfind("step_", 0) != 0) return -1;
  const std::string digits =
      name.substr(5, name.find('.') == std::string::npos ? std::string::npos : name.find('.') - 5);
  if (digits.empty() || digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoll(digits);
}

std::string step_dir_name(int64_t step) {
  if (step < 0) throw std::runtime_error("checkpoint: step must be >= 0, got " + std::to_string(step));
  char buf[32];
  std::snprintf(buf, sizeof(buf), "step_%06lld", static_cast<long long>(step));
  return buf;
}

std::string save_checkpoint(const std::string& dir, int64_t step, const std::vector<CheckpointFile>& files,
                            const nlohmann::json& meta) {
  const fs::path root(dir);
  if (!meta.is_null() && !meta.is_object()) throw err(root, "meta must be a JSON object");
  std::set<std::string> seen;
  for (const CheckpointFile& f : files) {
    if (!is_plain_name(f.filename) || f.filename == "meta.json")
      throw err(root, "'" + f.filename + "' is not a valid checkpoint file name");
    if (!seen.insert(f.filename).second) throw err(root, "file '" + f.filename + "' given twice");
  }
  const std::string name = step_dir_name(step);
  const fs::path final_dir = root / name, old = root / (name + ".old");

  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec || !fs::is_directory(root)) throw err(root, "cannot create directory (" + ec.message() + ")");
  const fs::path tmp = make_scratch_dir(final_dir);
  try {
    write_step_contents(tmp, step, files, meta);
  } catch (...) {
    fs::remove_all(tmp, ec);  // never leave a half-written step behind
    throw;
  }

  // Into place. A new step is one rename. An existing step (a re-save) is swapped with the new one
  // in one atomic exchange, so step_NNNNNN/ is complete at every instant; where the file system
  // cannot exchange, the old copy moves aside to step_NNNNNN.old/ first, and a reader that finds
  // `latest` naming a missing step falls back to that copy (load_checkpoint).
  if (!fs::exists(final_dir)) {
    fs::rename(tmp, final_dir, ec);
    if (ec) throw err(final_dir, "cannot rename " + tmp.string() + " into place (" + ec.message() + ")");
  } else {
    if (!is_own_checkpoint(final_dir))
      throw err(final_dir, "exists and is not (only) a shardlab checkpoint: it is never replaced");
    if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, final_dir.c_str(), RENAME_EXCHANGE) == 0) {
      fs::remove_all(tmp, ec);  // now the old copy, a checkpoint of ours
    } else {
      if (fs::exists(old, ec) && !is_own_checkpoint(old))
        throw err(old, "exists and is not a shardlab checkpoint: it is never replaced");
      fs::remove_all(old, ec);
      fs::rename(final_dir, old, ec);
      if (ec) throw err(final_dir, "cannot move the existing step aside (" + ec.message() + ")");
      fs::rename(tmp, final_dir, ec);
      if (ec) throw err(final_dir, "cannot rename " + tmp.string() + " into place (" + ec.message() + ")");
      fs::remove_all(old, ec);
    }
  }
  fsync_directory(root.string());

  write_text_atomic(root / "latest", name + "\n");  // LAST: until here the previous latest stands
  remove_stale_scratch(root);
  return final_dir.string();
}

std::vector<int64_t> checkpoint_steps(const std::string& dir) {
  std::vector<int64_t> steps;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return steps;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const int64_t step = step_of_dir_name(name);
    if (step >= 0 && name == step_dir_name(step) && fs::exists(e.path() / "meta.json", ec)) steps.push_back(step);
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

void prune_checkpoints(const std::string& dir, int keep) {
  if (keep <= 0) return;
  const std::string latest = read_latest(dir);
  const std::vector<int64_t> steps = checkpoint_steps(dir);
  std::error_code ec;
  for (size_t i = 0; i + keep < steps.size(); ++i) {
    const fs::path step = fs::path(dir) / step_dir_name(steps[i]);
    if (step.filename() == latest || !is_own_checkpoint(step)) continue;  // never latest, never anything else
    // Never a step a reader holds (CheckpointHold's shared lock): it stays for a later prune. The exclusive lock is
    // kept until the step is out of sight, so a reader that opened it just before finds it gone and looks again.
    const int fd = ::open(step.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0 && ::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
      ::close(fd);
      continue;
    }
    // Out of sight first (one rename), then removed: a kill in between leaves only scratch of ours.
    std::string doomed = step.string() + ".prune-XXXXXX";
    if (::mkdtemp(doomed.data())) {
      fs::rename(step, fs::path(doomed) / step.filename(), ec);
      fs::remove_all(doomed, ec);
    }
    if (fd >= 0) ::close(fd);
  }
}

bool is_scratch_name(const std::string& name) {
  for (const char* kind : {".tmp-", ".prune-"}) {
    const size_t at = name.rfind(kind);
    if (at != std::string::npos && at > 0 && name.size() == at + std::strlen(kind) + 6) return true;
  }
  return false;
}

bool is_own_checkpoint(const std::string& step_dir) {
  std::error_code ec;
  // A symlink is a person's, whatever it points to: never replaced or removed.
  if (fs::is_symlink(step_dir, ec) || !fs::is_directory(step_dir, ec)) return false;
  nlohmann::json m;
  try {
    m = parse_json_or_discarded(read_file((fs::path(step_dir) / "meta.json").string(), size_t(1) << 24));
  } catch (const std::exception&) {  // unreadable
    return false;
  }
  if (!m.is_object() || !m.contains("files") || !m["files"].is_object()) return false;
  for (const auto& e : fs::directory_iterator(step_dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name != "meta.json" && !m["files"].contains(name) && !is_scratch_name(name)) return false;
  }
  return true;
}

std::string read_latest(const std::string& dir) {
  const fs::path p = fs::path(dir) / "latest";
  std::error_code ec;
  if (!fs::exists(p, ec) && !fs::is_symlink(p, ec)) return "";
  std::string name;
  try {
    const std::vector<uint8_t> bytes = read_file_bytes(p.string(), 4096);  // any bytes: they are shown below
    name.assign(bytes.begin(), bytes.end());
  } catch (const std::runtime_error& e) {
    throw err(p, e.what());
  }
  while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back()))) name.pop_back();
  if (!is_plain_name(name) || step_of_dir_name(name) < 0 || name != step_dir_name(step_of_dir_name(name))) {
    std::string shown = name.substr(0, 60);  // as text: a NUL would cut the message, other bytes garble it
    for (char& c : shown)
      if (!std::isprint(static_cast<unsigned char>(c))) c = '?';
    throw err(p, "does not name a step directory ('" + shown + "'): it was not written by shardlab");
  }
  return name;
}

std::string resolve_step_dir(const std::string& dir_or_step, std::string* latest_named) {
  const fs::path given(dir_or_step);
  std::error_code ec;
  if (!fs::exists(given, ec)) throw err(given, "no such directory");
  if (!fs::is_directory(given, ec)) throw err(given, "not a directory");
  if (fs::exists(given / "meta.json", ec) || fs::is_symlink(given / "meta.json", ec)) return given.string();
  const std::string name = read_latest(given.string());
  if (latest_named) *latest_named = name;
  if (name.empty())
    throw err(given, "no meta.json (so not a step directory) and no latest file (so not a checkpoint directory)");
  fs::path step_dir = given / name;
  // A re-save of this step interrupted between its two renames (file systems without an atomic
  // exchange) left the previous copy as NAME.old: it is complete, so it is the checkpoint.
  if (!fs::is_directory(step_dir, ec) && fs::exists(given / (name + ".old") / "meta.json", ec))
    step_dir = given / (name + ".old");
  if (!fs::is_directory(step_dir, ec))
    throw err(given / "latest", "names " + name + ", but " + step_dir.string() + " does not exist");
  return step_dir.string();
}

LoadedCheckpoint load_checkpoint(const std::string& dir_or_step) {
  const CheckpointHold hold(dir_or_step);  // not pruned while it is read
  const fs::path step_dir = hold.step_dir();
  std::error_code ec;

  // meta.json
  const fs::path meta_path = step_dir / "meta.json";
  if (!fs::exists(meta_path, ec)) throw err(step_dir, "missing meta.json");
  std::string meta_text;  // text: a NUL byte (never in JSON shardlab writes) is refused, not read past
  try {
    meta_text = read_file(meta_path.string(), size_t(1) << 24);
  } catch (const std::runtime_error& e) {
    throw err(meta_path, e.what());
  }
  LoadedCheckpoint out;
  out.path = step_dir.string();
  out.meta = parse_json_text(meta_text, "checkpoint " + meta_path.string());
  const nlohmann::json& m = out.meta;
  if (!m.is_object()) throw err(meta_path, "not a JSON object");
  if (!m.contains("format_version") || !m["format_version"].is_number_integer())
    throw err(meta_path, "no integer format_version");
  if (m["format_version"].get<int64_t>() != kCheckpointFormatVersion)
    throw err(meta_path, "format_version " + m["format_version"].dump() + " is not supported (this build reads " +
                             std::to_string(kCheckpointFormatVersion) + ")");
  if (!m.contains("files") || !m["files"].is_object()) throw err(meta_path, "no 'files' object");
  // The step is checked, not trusted: a non-negative integer, the one the directory's name states.
  if (!m.contains("step") || !m["step"].is_number_integer() || m["step"].get<int64_t>() < 0)
    throw err(meta_path,
              "\"step\" must be a non-negative integer, got " + (m.contains("step") ? m["step"].dump() : "none"));
  const int64_t step = m["step"].get<int64_t>();
  if (const int64_t named = step_of_dir_name(step_dir.filename().string()); named >= 0 && named != step)
    throw err(meta_path, "says step " + std::to_string(step) + " but its directory is " + step_dir.filename().string());

  // Every listed file: size, then checksum, then safetensors validation.
  for (auto it = m["files"].begin(); it != m["files"].end(); ++it) {
    const std::string& fname = it.key();
    const nlohmann::json& info = it.value();
    if (!is_plain_name(fname)) throw err(meta_path, "lists an invalid file name '" + fname + "'");
    if (!info.is_object() || !info.contains("sha256") || !info["sha256"].is_string() || !info.contains("bytes") ||
        !info["bytes"].is_number_unsigned())
      throw err(meta_path, "entry for '" + fname + "' needs \"sha256\" (string) and \"bytes\" (integer)");
    const fs::path fpath = step_dir / fname;
    if (!fs::exists(fpath, ec)) throw err(fpath, "missing (listed in meta.json)");
    std::vector<uint8_t> bytes = read_whole_file(fpath);
    const uint64_t expect = info["bytes"].get<uint64_t>();
    if (bytes.size() != expect)
      throw err(fpath, "size " + std::to_string(bytes.size()) + " bytes, meta.json says " + std::to_string(expect) +
                           " (file truncated or corrupted)");
    if (sha256_hex(bytes.data(), bytes.size()) != info["sha256"].get<std::string>())
      throw err(fpath, "checksum mismatch (file corrupted or truncated)");
    SafetensorsFile file = SafetensorsFile::parse(std::move(bytes), fpath.string());
    const auto md = file.metadata();
    if (!md.count("step")) throw err(fpath, "has no step in its metadata (every file shardlab writes says its step)");
    if (md.at("step") != std::to_string(step))
      throw err(fpath, "is the file of step " + md.at("step") + ", but meta.json says step " + std::to_string(step));
    out.files.emplace(fname, std::move(file));
  }
  return out;
}

}  // namespace shardlab
