// A data file's identity (see data_identity.h).
#include "io/data_identity.h"

#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "io/sha256.h"

namespace shardlab {

nlohmann::json DataIdentity::to_json() const { return {{"path", path}, {"bytes", bytes}, {"sha256", sha256}}; }

DataIdentity DataIdentity::from_json(const nlohmann::json& j) {
  DataIdentity d;
  if (!j.is_object()) return d;
  if (j.contains("path") && j["path"].is_string()) d.path = j["path"].get<std::string>();
  if (j.contains("bytes") && j["bytes"].is_number_unsigned()) d.bytes = j["bytes"].get<uint64_t>();
  if (j.contains("sha256") && j["sha256"].is_string()) d.sha256 = j["sha256"].get<std::string>();
  return d;
}

std::string DataIdentity::describe() const {
  return "'" + path + "' (" + std::to_string(bytes) + " bytes, sha256 " + sha256.substr(0, 12) + "…)";
}

DataIdentity identify_data(const std::string& path, const std::vector<uint8_t>* bytes) {
  static std::map<std::string, DataIdentity> known;  // by absolute path: one hash per file and process
  std::error_code ec;
  const std::string abs = std::filesystem::weakly_canonical(std::filesystem::absolute(path), ec).string();
  if (!bytes)
    if (auto it = known.find(abs); it != known.end()) return it->second;
  DataIdentity d;
  d.path = abs;
  if (bytes) {
    d.bytes = bytes->size();
    d.sha256 = sha256_hex(bytes->data(), bytes->size());
  } else {
    d.bytes = std::filesystem::file_size(abs, ec);
    d.sha256 = sha256_hex_of_file(abs);
  }
  known[abs] = d;
  return d;
}

}  // namespace shardlab
