// parse_command and refuse_together (see command.h).
#include <cstdio>

#include "cli/command.h"

namespace shardlab {

namespace {

// The arguments, each ended by a NUL byte (which no argument can hold), and back.
std::string joined(const std::vector<std::string>& args) {
  std::string s;
  for (const std::string& a : args) s += a + '\0';
  return s;
}
std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> args;
  for (size_t from = 0, end; (end = s.find('\0', from)) != std::string::npos; from = end + 1)
    args.push_back(s.substr(from, end - from));
  return args;
}

}  // namespace

std::string command_line_differs(const std::vector<std::string>& args, const Runtime& rt) {
  if (rt.size() == 1) return "";
  const std::string root = rt.agree(joined(args));
  if (root == joined(args)) return "";
  const std::vector<std::string> theirs = split(root);
  size_t i = 0;
  while (i < args.size() && i < theirs.size() && args[i] == theirs[i]) ++i;
  const auto shown = [i](const std::vector<std::string>& v) {  // the argument and the next one
    return i >= v.size() ? std::string("nothing") : "'" + v[i] + (i + 1 < v.size() ? " " + v[i + 1] : "") + "'";
  };
  return "its command line differs from rank 0's at argument " + std::to_string(i + 1) + ": " + shown(args) +
         " (rank 0: " + shown(theirs) + "); every rank must be given the same command and flags";
}

int refuse_together(const Runtime& rt, const std::string& command, const std::string& why, int code) {
  const Runtime::Refusal first = rt.first_refusal(why.empty() ? 0 : code == 0 ? 2 : code);
  if (first.rank < 0) return -1;
  if (first.rank == rt.rank())
    print_line(command, rt.rank() == 0 ? "error" : "error (rank " + std::to_string(rt.rank()) + ")", why);
  return first.code;
}

int parse_command(Flags& flags, const std::vector<std::string>& args, const Runtime& rt, const std::string& command) {
  ParseResult r = flags.parse(args);
  // Every rank runs this command (main settled it); their flags must be the same too. A rank's own bad flag is said
  // first: it names the value.
  std::string why = r.kind == ParseResult::error ? r.message : "";
  if (std::string differs = command_line_differs(args, rt); why.empty()) why = differs;
  if (int rc = refuse_together(rt, command, why, 2); rc >= 0) return rc;
  if (r.kind == ParseResult::help) {  // every rank was given --help alike
    if (rt.is_root()) std::fputs(flags.help().c_str(), stdout);
    return 0;
  }
  return -1;
}

}  // namespace shardlab
