// Checkpoint save/load: the directory protocol of checkpoint.h. Ordering is what makes it
// crash-safe: step_NNNNNN.tmp/ is complete and fsynced before it is renamed to step_NNNNNN/,
// and DIR/latest is replaced only after that rename.
#include "io/checkpoint.h"

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <system_error>

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
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return false;
  std::streamoff size = in.tellg();
  if (size < 0) return false;
  out.resize(static_cast<size_t>(size));
  in.seekg(0);
  return static_cast<bool>(in.read(reinterpret_cast<char*>(out.data()), size));
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

  // Swap into place. rename() cannot replace a non-empty directory, so an existing step moves
  // aside first; the window in which step_NNNNNN/ is absent is two renames long.
  if (fs::exists(final_dir)) {
    fs::remove_all(old, ec);
    fs::rename(final_dir, old, ec);
    if (ec) throw err(final_dir, "cannot move the existing step aside (" + ec.message() + ")");
  }
  fs::rename(tmp, final_dir, ec);
  if (ec) throw err(final_dir, "cannot rename " + tmp.string() + " into place (" + ec.message() + ")");
  fs::remove_all(old, ec);
  fsync_directory(root.string());

  write_text_atomic(root / "latest", name + "\n");  // LAST: until here the previous latest stands
  return final_dir.string();
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
    if (!fs::is_directory(step_dir, ec)) {
      std::string hint =
          fs::exists(given / (name + ".old"), ec)
              ? " (a save was interrupted; " + (given / (name + ".old")).string() + " holds the old copy)"
              : "";
      throw err(given / "latest", "names " + name + ", but " + step_dir.string() + " does not exist" + hint);
    }
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
    out.files.emplace(fname, SafetensorsFile::parse(std::move(bytes), fpath.string()));
  }
  return out;
}

}  // namespace shardlab
