// Checkpoint save/load: the directory protocol of checkpoint.h. Ordering is what makes it
// crash-safe: step_NNNNNN.tmp/ is complete and fsynced before it is renamed to step_NNNNNN/,
// and DIR/latest is replaced only after that rename.
#include "io/checkpoint.h"

#include <fcntl.h>
#include <stdio.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include "core/paths.h"
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

bool read_whole_file(const fs::path& path, std::vector<uint8_t>& out) {
  if (std::string why = input_file_problem(path.string()); !why.empty()) throw err(path, why);
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return false;
  std::streamoff size = in.tellg();
  if (size < 0) return false;
  out.resize(static_cast<size_t>(size));
  in.seekg(0);
  return static_cast<bool>(in.read(reinterpret_cast<char*>(out.data()), size));
}

// The step a directory's name states: 40 for "step_000040" (or "step_000040.old"), -1 for other names.
int64_t step_of_dir_name(const std::string& name) {
  if (name.rfind("step_", 0) != 0) return -1;
  const std::string digits =
      name.substr(5, name.find('.') == std::string::npos ? std::string::npos : name.find('.') - 5);
  if (digits.empty() || digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoll(digits);
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
  const fs::path final_dir = root / name, tmp = root / (name + ".tmp"), old = root / (name + ".old");

  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec || !fs::is_directory(root)) throw err(root, "cannot create directory (" + ec.message() + ")");
  fs::remove_all(tmp, ec);  // leftover of an interrupted save
  if (ec) throw err(tmp, "cannot remove leftover directory (" + ec.message() + ")");
  if (!fs::create_directory(tmp, ec)) throw err(tmp, "cannot create directory (" + ec.message() + ")");
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
  } else if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, final_dir.c_str(), RENAME_EXCHANGE) == 0) {
    fs::remove_all(tmp, ec);  // now the old copy
  } else {
    fs::remove_all(old, ec);
    fs::rename(final_dir, old, ec);
    if (ec) throw err(final_dir, "cannot move the existing step aside (" + ec.message() + ")");
    fs::rename(tmp, final_dir, ec);
    if (ec) throw err(final_dir, "cannot rename " + tmp.string() + " into place (" + ec.message() + ")");
    fs::remove_all(old, ec);
  }
  fsync_directory(root.string());

  write_text_atomic(root / "latest", name + "\n");  // LAST: until here the previous latest stands
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
  std::string latest;
  std::ifstream(fs::path(dir) / "latest") >> latest;
  const std::vector<int64_t> steps = checkpoint_steps(dir);
  std::error_code ec;
  for (size_t i = 0; i + keep < steps.size(); ++i)
    if (step_dir_name(steps[i]) != latest) fs::remove_all(fs::path(dir) / step_dir_name(steps[i]), ec);
}

LoadedCheckpoint load_checkpoint(const std::string& dir_or_step) {
  const fs::path given(dir_or_step);
  std::error_code ec;
  if (!fs::exists(given, ec)) throw err(given, "no such directory");
  if (!fs::is_directory(given, ec)) throw err(given, "not a directory");

  // Resolve to a step directory.
  fs::path step_dir;
  if (fs::exists(given / "meta.json", ec)) {
    step_dir = given;
  } else if (fs::exists(given / "latest", ec)) {
    std::ifstream in(given / "latest");
    std::string name;
    if (!in || !std::getline(in, name)) throw err(given / "latest", "cannot read (empty or unreadable)");
    while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back()))) name.pop_back();
    if (!is_plain_name(name)) throw err(given / "latest", "does not name a step directory ('" + name + "')");
    step_dir = given / name;
    // A re-save of this step interrupted between its two renames (file systems without an atomic
    // exchange) left the previous copy as NAME.old: it is complete, so it is the checkpoint.
    if (!fs::is_directory(step_dir, ec) && fs::exists(given / (name + ".old") / "meta.json", ec))
      step_dir = given / (name + ".old");
    if (!fs::is_directory(step_dir, ec))
      throw err(given / "latest", "names " + name + ", but " + step_dir.string() + " does not exist");
  } else {
    throw err(given, "no meta.json (so not a step directory) and no latest file (so not a checkpoint directory)");
  }

  // meta.json
  const fs::path meta_path = step_dir / "meta.json";
  std::vector<uint8_t> meta_bytes;
  if (!fs::exists(meta_path, ec)) throw err(step_dir, "missing meta.json");
  if (!read_whole_file(meta_path, meta_bytes)) throw err(meta_path, "cannot read");
  LoadedCheckpoint out;
  out.path = step_dir.string();
  try {
    out.meta = nlohmann::json::parse(meta_bytes.begin(), meta_bytes.end());
  } catch (const nlohmann::json::parse_error& e) {
    throw err(meta_path, std::string("bad JSON (") + e.what() + ")");
  }
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
    std::vector<uint8_t> bytes;
    if (!read_whole_file(fpath, bytes)) throw err(fpath, "cannot read");
    const uint64_t expect = info["bytes"].get<uint64_t>();
    if (bytes.size() != expect)
      throw err(fpath, "size " + std::to_string(bytes.size()) + " bytes, meta.json says " + std::to_string(expect) +
                           " (file truncated or corrupted)");
    if (sha256_hex(bytes.data(), bytes.size()) != info["sha256"].get<std::string>())
      throw err(fpath, "checksum mismatch (file corrupted or truncated)");
    SafetensorsFile file = SafetensorsFile::parse(std::move(bytes), fpath.string());
    const auto md = file.metadata();
    if (md.count("step") && md.at("step") != std::to_string(step))
      throw err(fpath, "is the file of step " + md.at("step") + ", but meta.json says step " + std::to_string(step));
    out.files.emplace(fname, std::move(file));
  }
  return out;
}

}  // namespace shardlab
