// Catch2 (v2) entry point for the MPI tests: every rank runs the same test cases in the same order
// (the collectives inside them need all members), then the ranks agree on one verdict.
// Rank 0 reports on stdout; the other ranks write their report to a file and print it only if they
// failed, so a failure on any rank is visible and the output stays readable.
// Run: bash scripts/mpirun.sh -np N build/mpi_tests [catch options]; without mpirun it is a world of one.
#define CATCH_CONFIG_EXTERNAL_INTERFACES  // the listener below; the implementation: tests/common/catch_session.cpp
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include <unistd.h>

#include "../common/catch_session.h"
#include "comm/communicator.h"
#include "comm/mpi_errors.h"
#include "comm/runtime.h"
#include "core/blas_kernel.h"
#include "helpers.h"

// An MPI error (a message of the wrong length, say) names the test case it struck in (comm/mpi_errors.h).
struct NameTheTestCase : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  void testCaseStarting(const Catch::TestCaseInfo& info) override {
    shardlab::set_mpi_error_context("in test case '" + info.name + "'");
  }
};
CATCH_REGISTER_LISTENER(NameTheTestCase)

int main(int argc, char** argv) {
  shardlab::use_best_blas_kernel(argv);  // the kernel every shardlab process runs (core/blas_kernel.h)
  shardlab::Runtime rt(argc, argv);
  shardlab::test::set_world_size(rt.size());
  std::string log;
  if (!rt.is_root()) {
    const char* dir = std::getenv("TMPDIR");
    log = std::string(dir && *dir ? dir : "/tmp") + "/shardlab_mpi_tests." + std::to_string(::getpid()) + ".log";
  }
  const shardlab::test::CatchResult result = shardlab::test::run_catch(argc, argv, log);
  if (!result.ran) return result.status;  // a listing, or a command line Catch2 refused
  const int failed = result.status;

  // One verdict for the whole job: session.run() returns the number of failed assertions (capped at 255).
  shardlab::Communicator world = shardlab::Communicator::world(nullptr, nullptr, {});
  std::vector<int32_t> all = world.all_gather_value<int32_t>(failed);
  if (!log.empty()) {
    if (failed) {
      std::ifstream in(log);
      std::cout << "---- rank " << rt.rank() << " report ----\n" << in.rdbuf() << std::flush;
    }
    std::remove(log.c_str());
  }
  int total = 0;
  for (int32_t f : all) total += f;
  if (rt.is_root()) {
    std::printf("mpi_tests on %d rank(s): ", rt.size());
    for (size_t r = 0; r < all.size(); ++r) std::printf("%srank %zu: %d failed assertions", r ? ", " : "", r, all[r]);
    std::printf(" -> %s\n", total ? "FAIL" : "PASS");
  }
  return total ? 1 : 0;
}
