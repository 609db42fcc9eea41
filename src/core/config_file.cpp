// The line-by-line check of a --config file (see config_file.h).
#include "core/config_file.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "core/paths.h"

namespace shardlab {

std::string config_problem(const std::string& path, const std::vector<std::string>& toggles) {
  if (std::string why = input_file_problem(path); !why.empty()) return why;
  std::string text;
  try {
    text = read_file(path, size_t(1) << 20);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  if (text.rfind("\xEF\xBB\xBF", 0) == 0)
    return path +
           " starts with a byte-order mark (U+FEFF), which the config reader takes for part of the first key; "
           "save it as UTF-8 without one";
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const std::string where = path + " line " + std::to_string(n) + ": ";
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    if (line[first] == '[') return where + "config files hold flags only, no [sections]";
    const size_t eq = line.find('=');
    if (eq == std::string::npos) return where + "expected key = value";
    std::string key = line.substr(first, eq - first), value = line.substr(eq + 1);
    key.erase(key.find_last_not_of(" \t") + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    value.erase(value.find_last_not_of(" \t\r") + 1);
    // The reader ends a value at '#', even inside quotes: "a#b" would come back as '"a'.
    if (value.find('#') != std::string::npos)
      return where + "'" + key + "' has a '#' in its value, '" + value +
             "': comments go on their own line, and a value holding a '#' is given as --" + key +
             " on the command line";
    const bool quoted_value = value.size() >= 2 && (value[0] == '"' || value[0] == '\'') && value.back() == value[0] &&
                              value.find(value[0], 1) == value.size() - 1;
    // Unquoted, the reader splits a value at commas and keeps one part: pp-layers = 3,5 would come back as '5'.
    if (!quoted_value && value.find(',') != std::string::npos && value[0] != '[')
      return where + "'" + key + "' = " + value + " would be read as several values: quote it (" + key + " = \"" +
             value + "\")";
    if (value.empty() || value[0] == '[' || (!quoted_value && value.find_first_of(" \t\"'") != std::string::npos))
      return where + "'" + key + "' needs exactly one value, got '" + value + "'";
    if (std::find(toggles.begin(), toggles.end(), key) != toggles.end() && value != "true" && value != "false")
      return where + "'" + key + "' is a switch: true or false, got '" + value + "'";
  }
  return "";
}

}  // namespace shardlab
