// Flags on CLI11 (see flags.h). CLI11 reads every value into a string; after parsing, each flag that
// was given is converted by our own parser, so every command accepts and refuses numbers alike.
#include "core/flags.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/config_file.h"
#include "core/paths.h"

namespace shardlab {

std::string exact_number(double v) {
  char buf[40];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

namespace {

// "" or why the text is not a value of the kind.
std::string to_int(const std::string& s, int lo, int hi, int& out) {
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end || errno) return "expects an integer, got '" + s + "'";
  if (v < lo || v > hi) return "expects an integer in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " + s;
  out = static_cast<int>(v);
  return "";
}

// Also accepts integers in scientific notation ("7e9"), as parameter counts are written.
std::string to_u64(const std::string& s, uint64_t& out) {
  const std::string why = "expects a non-negative integer, got '" + s + "'";
  if (s.empty() || s.find('-') != std::string::npos) return why;
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (*end == '.' || *end == 'e' || *end == 'E') {
    long double x = std::strtold(s.c_str(), &end);
    if (*end || !(x >= 0) || x > 1.8e19L || x != std::floor(x)) return why;
    v = static_cast<unsigned long long>(x);
  } else if (*end || errno) {
    return why;
  }
  out = v;
  return "";
}

std::string to_double(const std::string& s, double& out) {
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end || !std::isfinite(v)) return "expects a finite number, got '" + s + "'";
  if (errno == ERANGE && v == 0 && s.find_first_of("123456789") < s.find_first_of("eE"))  // 1e-400: not 0
    return "expects a number a double can hold, got '" + s + "' (it underflows to 0)";
  out = v;
  return "";
}

std::string quoted(const std::string& s) {
  const char q = s.find('"') == std::string::npos ? '"' : '\'';  // TOML: basic or literal string
  return q + s + q;
}

// CLI11's TOML reader with the one rule for a key given again: the later line wins. CLI11 alone merges a repeat
// only with the line just before it (a switch then has "too many inputs for a flag"), and of two lines apart keeps
// the first (its option is set by then). So each key is handed over once, with its last line's value.
class LaterLineWins : public CLI::ConfigTOML {
 public:
  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override {
    std::vector<CLI::ConfigItem> items = CLI::ConfigTOML::from_config(input), kept;
    for (size_t i = 0; i < items.size(); ++i) {
      bool again = false;  // given again further down
      for (size_t j = i + 1; j < items.size() && !again; ++j)
        again = items[j].name == items[i].name && items[j].parents == items[i].parents;
      if (again) continue;
      if (items[i].inputs.size() > 1) items[i].inputs = {items[i].inputs.back()};  // "k = 1" then "k = 2" next to it
      kept.push_back(std::move(items[i]));
    }
    return kept;
  }
};

// CLI11's help with one blank line between groups (its own puts two).
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_help(const CLI::App* app, std::string name, CLI::AppFormatMode) const override {
    std::string out = make_description(app) + make_usage(app, name) + make_positionals(app);
    for (const std::string& group : app->get_groups()) {
      std::vector<const CLI::Option*> opts =
          app->get_options([&](const CLI::Option* o) { return o->get_group() == group && o->nonpositional(); });
      if (!group.empty() && !opts.empty()) out += make_group(group, false, opts);
    }
    return out;
  }
};

}  // namespace

struct Flags::Binding {
  enum Kind { i32, u64, f64, f64_optional, text, choice, parsed, toggle } kind;
  std::string name, group;
  void* field;
  std::vector<std::string> choices;
  std::function<std::string()> get;                      // choices: the current word
  std::function<void(const std::string&)> set;           // choices: store the word given (one of `choices`)
  std::function<std::string(const std::string&)> parse;  // parsed: store the value, or say why not
  int lo = 0, hi = 0;
  std::string raw;  // what CLI11 read
  bool on = false;  // toggles
  CLI::Option* option = nullptr;

  std::string value_text() const {
    switch (kind) {
      case i32: return std::to_string(*static_cast<int*>(field));
      case u64: return std::to_string(*static_cast<uint64_t*>(field));
      case f64: return exact_number(*static_cast<double*>(field));
      case f64_optional: {
        const auto& v = *static_cast<std::optional<double>*>(field);
        return v ? exact_number(*v) : "";
      }
      case toggle: return *static_cast<bool*>(field) ? "true" : "false";
      case choice:
      case parsed: return get();
      default: return *static_cast<std::string*>(field);
    }
  }
  std::string convert() {  // "" or the error sentence
    std::string why;
    switch (kind) {
      case i32: why = to_int(raw, lo, hi, *static_cast<int*>(field)); break;
      case u64: why = to_u64(raw, *static_cast<uint64_t*>(field)); break;
      case f64: why = to_double(raw, *static_cast<double*>(field)); break;
      case f64_optional: {
        double v = 0;
        why = to_double(raw, v);
        *static_cast<std::optional<double>*>(field) = v;
        break;
      }
      case text: *static_cast<std::string*>(field) = raw; break;
      case parsed: why = parse(raw); break;
      case toggle: *static_cast<bool*>(field) = on; break;
      case choice: {
        std::string all;
        for (const std::string& c : choices) {
          if (c == raw) {
            set(raw);
            return "";
          }
          all += (all.empty() ? "" : "|") + c;
        }
        why = "expects one of " + all + ", got '" + raw + "'";
      }
    }
    return why.empty() ? why : name + " " + why;
  }
};

struct Flags::Impl {
  CLI::App app;
  std::string group = "Options";
  std::vector<std::unique_ptr<Binding>> bindings;
  CLI::Option* config = nullptr;
  Impl(const std::string& command, const std::string& description) : app(description, command) {}

  Binding& bind(Binding::Kind kind, const std::string& name, void* field, const std::string& help,
                const std::string& type) {
    bindings.push_back(std::make_unique<Binding>());
    Binding& b = *bindings.back();
    b.kind = kind;
    b.name = name;
    b.group = group;
    b.field = field;
    if (kind == Binding::toggle)
      b.option = app.add_flag(name, b.on, help);  // --name, or --name=true|false
    else
      b.option = app.add_option(name, b.raw, help)->type_name(type);
    b.option->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // the last one given wins, switches too
    b.option->group(group);
    return b;
  }
};

Flags::Flags(const std::string& command, const std::string& description)
    : impl_(std::make_unique<Impl>(command, description)) {
  impl_->app.allow_config_extras(CLI::config_extras_mode::error);
  impl_->app.config_formatter(std::make_shared<LaterLineWins>());
  auto formatter = std::make_shared<HelpFormatter>();
  formatter->column_width(34);
  impl_->app.formatter(formatter);
}
Flags::~Flags() = default;

void Flags::group(const std::string& heading) { impl_->group = heading; }

void Flags::add(const std::string& name, int& v, const std::string& help, int lo, int hi) {
  Binding& b = impl_->bind(Binding::i32, name, &v, help, "INT");
  b.lo = lo;
  b.hi = hi;
  b.option->default_str(b.value_text());
}
void Flags::add(const std::string& name, uint64_t& v, const std::string& help) {
  Binding& b = impl_->bind(Binding::u64, name, &v, help, "UINT");
  b.option->default_str(b.value_text());
}
void Flags::add(const std::string& name, double& v, const std::string& help) {
  Binding& b = impl_->bind(Binding::f64, name, &v, help, "NUMBER");
  b.option->default_str(b.value_text());
}
void Flags::add(const std::string& name, std::optional<double>& v, const std::string& help) {
  impl_->bind(Binding::f64_optional, name, &v, help, "NUMBER");
}
void Flags::add(const std::string& name, std::string& v, const std::string& help, const std::string& type) {
  Binding& b = impl_->bind(Binding::text, name, &v, help, type);
  if (!v.empty()) b.option->default_str(v);
}
void Flags::choice(const std::string& name, std::string& v, const std::vector<std::string>& choices,
                   const std::string& help) {
  choice(
      name, [&v] { return v; }, [&v](const std::string& w) { v = w; }, choices, help);
}
void Flags::choice(const std::string& name, std::function<std::string()> get,
                   std::function<void(const std::string&)> set, const std::vector<std::string>& choices,
                   const std::string& help) {
  std::string type;
  for (const std::string& c : choices) type += (type.empty() ? "" : "|") + c;
  Binding& b = impl_->bind(Binding::choice, name, nullptr, help, type);
  b.choices = choices;
  b.get = std::move(get);
  b.set = std::move(set);
  b.option->default_str(b.get());
}
void Flags::add(const std::string& name, std::function<std::string()> get,
                std::function<std::string(const std::string&)> parse, const std::string& help,
                const std::string& type) {
  Binding& b = impl_->bind(Binding::parsed, name, nullptr, help, type);
  b.get = std::move(get);
  b.parse = std::move(parse);
  if (!b.get().empty()) b.option->default_str(b.get());
}
void Flags::flag(const std::string& name, bool& v, const std::string& help) {
  impl_->bind(Binding::toggle, name, &v, help, "");
}

void Flags::positional(const std::string& name, std::vector<std::string>& v, const std::string& help, int min,
                       int max) {
  CLI::Option* o = impl_->app.add_option(name, v, help)->expected(min, max);
  if (min > 0) o->required();
}

namespace {
// A string that a TOML line of CLI11's reader gives back unchanged: no comment mark, no line break.
bool representable(const std::string& s) {
  return s.find_first_of("#\n\r") == std::string::npos &&
         (s.find('"') == std::string::npos || s.find('\'') == std::string::npos);
}

}  // namespace

void Flags::config_file(const std::string& name, const std::string& help) {
  impl_->config = impl_->app.set_config(name, "", help);
  impl_->config->type_name("FILE")->group(impl_->group);
  Impl* impl = impl_.get();
  impl_->config->check(CLI::Validator(
      [impl](const std::string& path) {
        std::vector<std::string> toggles;
        for (const auto& b : impl->bindings)
          if (b->kind == Binding::toggle) toggles.push_back(b->name.substr(b->name.find_first_not_of('-')));
        return config_problem(path, toggles);
      },
      "", "config file"));
}

ParseResult Flags::parse(const std::vector<std::string>& args) {
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last-first
  try {
    impl_->app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    return {ParseResult::help, ""};
  } catch (const CLI::CallForAllHelp&) {
    return {ParseResult::help, ""};
  } catch (const CLI::ExtrasError& e) {
    // CLI11 2.1 joins the unexpected arguments last-first (detail::rjoin); name them as they were typed.
    const std::vector<std::string> extras = impl_->app.remaining();
    if (extras.empty()) return {ParseResult::error, e.what()};
    std::string typed;
    for (const std::string& a : extras) typed += (typed.empty() ? "" : " ") + a;
    return {ParseResult::error, std::string(extras.size() > 1 ? "The following arguments were not expected: "
                                                              : "The following argument was not expected: ") +
                                    typed};
  } catch (const CLI::ParseError& e) {
    return {ParseResult::error, e.what()};
  }
  for (auto& b : impl_->bindings)
    if (b->option->count() > 0)
      if (std::string why = b->convert(); !why.empty()) return {ParseResult::error, why};
  return {};
}

std::string Flags::help() const { return impl_->app.help(); }

std::string Flags::config_path() const {
  return impl_->config && impl_->config->count() > 0 ? impl_->config->as<std::string>() : "";
}

bool Flags::given(const std::string& name) const {
  for (const auto& b : impl_->bindings)
    if (b->name == name) return b->option->count() > 0;
  return false;
}

std::string Flags::to_toml(const std::vector<std::string>& commented) const {
  std::ostringstream o;
  std::string group;
  for (const auto& b : impl_->bindings) {
    if (b->group != group) {
      group = b->group;
      o << "\n# " << group << "\n";
    }
    const std::string key = b->name.substr(b->name.find_first_not_of('-'));
    const bool is_text = b->kind == Binding::text || b->kind == Binding::choice || b->kind == Binding::parsed;
    const bool comment = std::find(commented.begin(), commented.end(), b->name) != commented.end();
    if (is_text && !representable(b->value_text())) {  // shown as far as it can be, never read back wrong
      o << "# " << key << " cannot be written in a config file (a '#', a line break or both quotes): give " << b->name
        << " on the command line\n";
      continue;
    }
    o << (comment ? "# " : "") << key << " = " << (is_text ? quoted(b->value_text()) : b->value_text()) << "\n";
  }
  return o.str();
}

nlohmann::json Flags::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& b : impl_->bindings) {
    const std::string key = b->name.substr(b->name.find_first_not_of('-'));
    switch (b->kind) {
      case Binding::i32: j[key] = *static_cast<int*>(b->field); break;
      case Binding::u64: j[key] = *static_cast<uint64_t*>(b->field); break;
      case Binding::f64: j[key] = *static_cast<double*>(b->field); break;
      case Binding::f64_optional: {
        const auto& v = *static_cast<std::optional<double>*>(b->field);
        if (v) j[key] = *v;
        break;
      }
      case Binding::toggle: j[key] = *static_cast<bool*>(b->field); break;
      default: j[key] = b->value_text();
    }
  }
  return j;
}

std::string Flags::read_json(const nlohmann::json& j) {
  if (!j.is_object()) return "expected an object of flags";
  for (const auto& [key, v] : j.items()) {
    bool known = false;
    for (const auto& b : impl_->bindings) known = known || b->name.substr(b->name.find_first_not_of('-')) == key;
    if (!known) return "unknown setting '" + key + "'";
  }
  for (const auto& b : impl_->bindings) {
    const std::string key = b->name.substr(b->name.find_first_not_of('-'));
    if (!j.contains(key)) continue;
    const nlohmann::json& v = j.at(key);
    const bool numeric = b->kind == Binding::i32 || b->kind == Binding::u64 || b->kind == Binding::f64 ||
                         b->kind == Binding::f64_optional;
    if (b->kind == Binding::toggle) {
      if (!v.is_boolean()) return "'" + key + "' is a switch: true or false, got " + v.dump();
      b->on = v.get<bool>();
    } else if (numeric) {
      if (!v.is_number()) return "'" + key + "' expects a number, got " + v.dump();
      b->raw = v.is_number_float() ? exact_number(v.get<double>()) : v.dump();
    } else {
      if (!v.is_string()) return "'" + key + "' expects text, got " + v.dump();
      b->raw = v.get<std::string>();
    }
    if (std::string why = b->convert(); !why.empty()) return why;
  }
  return "";
}

}  // namespace shardlab
