// The files shardlab owns (see owned_files.h). DIR/shardlab-files.json:
//   {"shardlab_files": 1, "files": {"loss.csv": {"bytes": 35, "sha256": "…"}, "p.json": {…, "by": "plan --predict
//   --json"}, …}}
// rewritten whole (atomically) after every file it records. A manifest that is not this format is somebody
// else's file: nothing in its directory is then shardlab's, and it is never replaced.
#include "io/owned_files.h"

#include <cctype>
#include <filesystem>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/paths.h"
#include "io/files.h"
#include "io/json_file.h"
#include "io/sha256.h"

namespace shardlab {

namespace fs = std::filesystem;

namespace {

struct Manifest {
  fs::path path;
  nlohmann::json files = nlohmann::json::object();
  std::string problem;  // "" when absent or shardlab's
};

Manifest read_manifest(const fs::path& dir) {
  Manifest m;
  m.path = dir / kOwnedFilesName;
  std::error_code ec;
  if (!fs::exists(m.path, ec) && !fs::is_symlink(m.path, ec)) return m;
  nlohmann::json j;
  try {
    j = parse_json_or_discarded(read_file(m.path.string(), size_t(16) << 20));
  } catch (const std::exception& e) {
    m.problem = e.what();
    return m;
  }
  if (fs::is_symlink(m.path, ec) || !j.is_object() || j.value("shardlab_files", 0) != 1 || !j.contains("files") ||
      !j["files"].is_object())
    m.problem = "'" + m.path.string() + "' is not shardlab's record of its files";
  else
    m.files = j["files"];
  return m;
}

void write_manifest(const Manifest& m) {
  const nlohmann::json j = {{"shardlab_files", 1}, {"files", m.files}};
  write_text_file_atomic(m.path.string(), j.dump(1) + "\n");
}

fs::path dir_of(const fs::path& p) { return p.has_parent_path() ? p.parent_path() : fs::path("."); }

// Rows appended to a log: lines of numbers and commas only (a step's loss.csv row).
bool only_rows(const std::string& tail) {
  for (char c : tail)
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == ',' || c == '.' || c == '-' || c == '+' || c == 'e' ||
          c == 'E' || c == '\n' || c == 'n' || c == 'a' || c == 'i' || c == 'f'))
      return false;
  return true;
}

// How a file's writer is named in a message.
std::string writer(const std::string& by) {
  return by.empty() ? "a run of shardlab (or as one of its pictures)" : "`" + by + "`";
}

}  // namespace

std::string owned_file_problem(const std::string& path, bool log, const std::string& by) {
  const fs::path p(path);
  std::error_code ec;
  if (!fs::exists(p, ec) && !fs::is_symlink(p, ec)) return "";
  if (fs::is_symlink(p, ec) || !fs::is_regular_file(p, ec)) {
    const fs::file_type t = fs::status(p, ec).type();
    const char* what = fs::is_symlink(p, ec)                                        ? " (a symbolic link)"
                       : t == fs::file_type::directory                              ? " (a directory)"
                       : t == fs::file_type::fifo                                   ? " (a FIFO)"
                       : t == fs::file_type::socket                                 ? " (a socket)"
                       : t == fs::file_type::block || t == fs::file_type::character ? " (a device)"
                                                                                    : "";
    return "'" + path + "' is not a regular file" + what;
  }
  const Manifest m = read_manifest(dir_of(p));
  if (!m.problem.empty()) return "'" + path + "' is not recorded as shardlab's (" + m.problem + ")";
  const std::string name = p.filename().string();
  if (!m.files.contains(name) || !m.files[name].is_object())
    return "'" + path + "' was not written by shardlab (" + m.path.string() + " does not list it)";
  const nlohmann::json& rec = m.files[name];
  const uint64_t bytes = rec.value("bytes", uint64_t(0));
  const std::string sha = rec.value("sha256", ""), was_by = rec.value("by", "");
  std::string text;
  try {
    text = read_file(path, size_t(1) << 34);
  } catch (const std::exception& e) {
    return e.what();
  }
  const bool same = text.size() == bytes && sha256_hex(text.data(), text.size()) == sha;
  const bool grown =
      log && text.size() > bytes && sha256_hex(text.data(), bytes) == sha && only_rows(text.substr(bytes));
  if (!same && !grown) return "'" + path + "' was changed since shardlab wrote it";
  if (was_by != by) return "'" + path + "' was written by " + writer(was_by) + ", not by " + writer(by);
  return "";
}

std::string output_file_problem(const std::string& path, const std::string& flag, const std::string& by,
                                const std::vector<std::string>& inputs) {
  std::error_code ec;
  if (path.empty()) return flag + " needs a file name";
  for (const std::string& in : inputs)
    if (!in.empty() && fs::exists(in, ec) && fs::exists(path, ec) && fs::equivalent(in, path, ec))
      return "'" + path + "' is one of the command's inputs; give another " + flag;
  if (std::string why = owned_file_problem(path, false, by); !why.empty())
    return why + "; shardlab never replaces it: give another " + flag;
  return "";
}

std::string owned_record_problem(const std::string& dir) { return read_manifest(fs::path(dir)).problem; }

void record_owned_file(const std::string& path) {
  const fs::path p(path);
  Manifest m = read_manifest(dir_of(p));
  if (!m.problem.empty()) throw std::runtime_error("cannot record " + path + ": " + m.problem);
  const std::string text = read_file(path, size_t(1) << 34);
  nlohmann::json& rec = m.files[p.filename().string()];
  const std::string by = rec.is_object() ? rec.value("by", "") : "";
  rec = {{"bytes", text.size()}, {"sha256", sha256_hex(text.data(), text.size())}};
  if (!by.empty()) rec["by"] = by;
  write_manifest(m);
}

void write_owned_file(const std::string& path, const std::string& text, bool log, const std::string& by) {
  if (std::string why = owned_file_problem(path, log, by); !why.empty())
    throw std::runtime_error(why + "; shardlab never replaces such a file: move it away");
  const fs::path p(path);
  Manifest m = read_manifest(dir_of(p));
  if (!m.problem.empty()) throw std::runtime_error("cannot write " + path + ": " + m.problem);
  write_text_file_atomic(path, text);
  nlohmann::json rec = {{"bytes", text.size()}, {"sha256", sha256_hex(text.data(), text.size())}};
  if (!by.empty()) rec["by"] = by;
  m.files[p.filename().string()] = rec;
  write_manifest(m);
}

bool remove_owned_file(const std::string& path) {
  const fs::path p(path);
  std::error_code ec;
  if ((!fs::exists(p, ec) && !fs::is_symlink(p, ec)) || !owned_file_problem(path).empty()) return false;
  Manifest m = read_manifest(dir_of(p));
  fs::remove(p, ec);
  if (ec) return false;
  m.files.erase(p.filename().string());
  write_manifest(m);
  return true;
}

}  // namespace shardlab
