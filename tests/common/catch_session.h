// Catch2 (v2)'s session, behind one call, so that its implementation is compiled once (catch_session.cpp) for both
// test runners, tests/unit/main.cpp and tests/mpi/main.cpp.
#pragma once
#include <string>

namespace shardlab::test {

struct CatchResult {
  int status = 0;    // failed assertions (capped at 255 by Catch2), or the exit code of a bad command line
  bool ran = false;  // the tests ran: false for a listing (--list-tests, …) or a command line Catch2 refused
};

// Catch2 over argc/argv; report_file: "" for stdout, else the file its report goes to.
CatchResult run_catch(int argc, char** argv, const std::string& report_file = "");

}  // namespace shardlab::test
