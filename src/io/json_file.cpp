// Reading JSON (see json_file.h). The key being read is followed with the parser's callback: a stack of the
// objects and arrays open at each moment, with the current key of each object and the count of finished
// elements of each array.
#include "io/json_file.h"

#include <stdexcept>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/paths.h"

namespace shardlab {

namespace {

struct Open {  // an object or array being parsed
  bool array;
  std::string key;  // an object's current key
  size_t done = 0;  // an array's finished elements
};

std::string where(const std::vector<Open>& open) {
  std::string path;
  for (const Open& o : open) {
    if (o.array)
      path += "[" + std::to_string(o.done) + "]";
    else if (!o.key.empty())
      path += (path.empty() ? "" : ".") + o.key;
  }
  return path;
}

// The library's message without its "[json.exception.out_of_range.406] " prefix.
std::string plain(const char* what) {
  std::string s = what;
  const size_t end = s.rfind("] ");
  return s.rfind("[json.exception.", 0) == 0 && end != std::string::npos ? s.substr(end + 2) : s;
}

}  // namespace

nlohmann::json parse_json_text(const std::string& text, const std::string& name) {
  using json = nlohmann::json;
  std::vector<Open> open;
  auto follow = [&open](int, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start: open.push_back({false, ""}); break;
      case json::parse_event_t::array_start: open.push_back({true, ""}); break;
      case json::parse_event_t::key: open.back().key = parsed.get<std::string>(); break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        open.pop_back();
        if (!open.empty() && open.back().array) ++open.back().done;
        break;
      case json::parse_event_t::value:
        if (!open.empty() && open.back().array) ++open.back().done;
        break;
    }
    return true;
  };
  try {
    return json::parse(text, follow);
  } catch (const json::parse_error& e) {
    const size_t at = e.byte > 0 ? e.byte - 1 : 0;
    const bool cut = at + 1 >= text.size();
    const std::string key = where(open);
    throw std::runtime_error(
        name + " is damaged: " +
        (cut ? "it ends before its JSON does (cut short at " + std::to_string(text.size()) + " bytes?)"
             : "not JSON at byte " + std::to_string(at) + " of " + std::to_string(text.size())) +
        (key.empty() ? "" : ", in \"" + key + "\""));
  } catch (const json::exception& e) {  // e.g. out_of_range 406: a number no double holds ("1e400")
    const std::string key = where(open);
    throw std::runtime_error(name + " is damaged: " + plain(e.what()) + (key.empty() ? "" : ", at \"" + key + "\"") +
                             (e.id == 406 ? " (a double holds numbers up to about 1.8e308)" : ""));
  }
}

nlohmann::json read_json_file(const std::string& path, size_t max_bytes) {
  return parse_json_text(read_file(path, max_bytes), "'" + path + "'");  // read_file also refuses NUL bytes
}

nlohmann::json parse_json_or_discarded(const std::string& text) {
  try {
    return nlohmann::json::parse(text, nullptr, false);
  } catch (const std::exception&) {  // never: with exceptions off the library returns a discarded value
    return nlohmann::json(nlohmann::json::value_t::discarded);
  }
}

}  // namespace shardlab
