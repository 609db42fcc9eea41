// parse_command (see command.h).
#include <cstdio>

#include "cli/command.h"

namespace shardlab {

int parse_command(Flags& flags, const std::vector<std::string>& args, const Runtime& rt, const std::string& command) {
  ParseResult r = flags.parse(args);
  if (r.kind == ParseResult::run) return -1;
  if (r.kind == ParseResult::help) {
    if (rt.is_root()) std::fputs(flags.help().c_str(), stdout);
    return 0;
  }
  if (rt.is_root()) print_line(command, "error", r.message);
  return 2;
}

}  // namespace shardlab
