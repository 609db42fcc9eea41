// Reading a JSON file a command wrote (see json_file.h).
#include "io/json_file.h"

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/paths.h"

namespace shardlab {

nlohmann::json read_json_file(const std::string& path, size_t max_bytes) {
  const std::string text = read_file(path, max_bytes);  // also refuses NUL bytes (binary)
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    const size_t at = e.byte > 0 ? e.byte - 1 : 0;
    const bool cut = at + 1 >= text.size();
    throw std::runtime_error(
        "'" + path + "' is damaged: " +
        (cut ? "it ends before its JSON does (cut short at " + std::to_string(text.size()) + " bytes?)"
             : "not JSON at byte " + std::to_string(at) + " of " + std::to_string(text.size())));
  }
}

}  // namespace shardlab
