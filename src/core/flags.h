// Command-line flags bound to fields, with CLI11 underneath (only flags.cpp includes it). One Flags
// object describes one command: its flags in help groups, their defaults (the fields' values when
// added), an optional --config FILE (TOML) and positional arguments. Parsing is CLI11's — unknown
// flags, missing values, `--name=value`, --help with groups; one rule for repeats: a flag given again
// overrides the earlier one — a switch (`--exact`, `--exact=false`) as any other, on the command line as in
// --config, where a key's later line wins wherever it is — and the command line overrides --config —
// and converting a value
// is ours, the same for every command: integers within a range, doubles finite (NaN and Inf are
// refused) and exact (strtod, never through long double), unsigned integers never negative, choices
// from a list. The same object writes every flag's current value back out exactly (to_toml, to_json),
// so a run's resolved configuration can be read again and reproduce it.
// Leaves out: subcommands (main.cpp dispatches on the first word), short flags, environment variables.
#pragma once
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/spelling.h"

namespace shardlab {

// What parse() found: run the command, print its help, or report one error sentence.
struct ParseResult {
  enum Kind { run, help, error } kind = run;
  std::string message;  // the error, naming the flag
};

class Flags {
 public:
  Flags(const std::string& command, const std::string& description);  // command: e.g. "shardlab train"
  ~Flags();
  Flags(const Flags&) = delete;
  Flags& operator=(const Flags&) = delete;

  // Flags added from now on are listed under this heading in --help.
  void group(const std::string& heading);

  void add(const std::string& name, int& v, const std::string& help, int lo = std::numeric_limits<int>::min(),
           int hi = std::numeric_limits<int>::max());
  void add(const std::string& name, uint64_t& v, const std::string& help);
  void add(const std::string& name, double& v, const std::string& help);                 // finite numbers only
  void add(const std::string& name, std::optional<double>& v, const std::string& help);  // absent unless given
  void add(const std::string& name, std::string& v, const std::string& help, const std::string& type = "TEXT");
  // A value with its own text form (e.g. a list): get writes it, parse reads it into the field or returns why
  // not (the flag's name is put before the reason).
  void add(const std::string& name, std::function<std::string()> get,
           std::function<std::string(const std::string&)> parse, const std::string& help, const std::string& type);
  void choice(const std::string& name, std::string& v, const std::vector<std::string>& choices,
              const std::string& help);
  // A typed setting and its spelling table (core/spelling.h): the words are the choices.
  template <class E, size_t N>
  void choice(const std::string& name, E& v, const Spelling<E> (&words)[N], const std::string& help) {
    std::vector<std::string> choices;
    for (const Spelling<E>& s : words) choices.push_back(s.word);
    choice(
        name, [&v, &words] { return std::string(word_of(words, v)); },
        [&v, &words](const std::string& w) { read_word(words, w, &v); }, choices, help);
  }
  // The general form: a choice read and written through get/set (set receives one of the choices).
  void choice(const std::string& name, std::function<std::string()> get, std::function<void(const std::string&)> set,
              const std::vector<std::string>& choices, const std::string& help);
  void flag(const std::string& name, bool& v, const std::string& help);  // a switch: given = true
  // Positional arguments (in order), between min and max of them.
  void positional(const std::string& name, std::vector<std::string>& v, const std::string& help, int min, int max);
  // --config FILE: flags read from a TOML file (key = value, the flag names without "--"); flags on the
  // command line override it. The file must be a regular, readable file; unknown keys are errors.
  void config_file(const std::string& name, const std::string& help);

  ParseResult parse(const std::vector<std::string>& args);
  std::string help() const;
  // The --config file given ("" if none).
  std::string config_path() const;
  // Was the flag on the command line or in the config file? (name with "--")
  bool given(const std::string& name) const;

  // Every flag (not positionals, not --config) with its current value, in the order added.
  // "# heading" comments between groups, strings quoted; the flags named in `commented` are written
  // commented out (shown, not read back).
  std::string to_toml(const std::vector<std::string>& commented = {}) const;
  nlohmann::json to_json() const;
  // The inverse of to_json: each key sets its flag's field, converted and checked as on the command line
  // (no command line is built); keys are read in the order the flags were added. "" or one sentence
  // naming the key.
  std::string read_json(const nlohmann::json& j);

 private:
  struct Binding;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The shortest decimal text that reads back as exactly v ("0.004", not "0.0040000000000000001").
std::string exact_number(double v);

}  // namespace shardlab
