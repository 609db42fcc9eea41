// Catch2 (v2)'s implementation, compiled once and linked into both test runners (see catch_session.h).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "catch_session.h"

namespace shardlab::test {

CatchResult run_catch(int argc, char** argv, const std::string& report_file) {
  Catch::Session session;
  if (int rc = session.applyCommandLine(argc, argv)) return {rc, false};
  if (!report_file.empty()) session.configData().outputFilename = report_file;
  const int failed = session.run();
  const Catch::ConfigData& c = session.configData();
  if (c.listTests || c.listTestNamesOnly || c.listTags || c.listReporters) return {0, false};  // run() counted them
  return {failed, true};
}

}  // namespace shardlab::test
