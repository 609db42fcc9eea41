// Catch2 (v2) entry point for the single-process unit tests, on the BLAS kernel every shardlab process
// runs (core/blas_kernel.h).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "core/blas_kernel.h"

int main(int argc, char** argv) {
  shardlab::use_best_blas_kernel(argv);
  return Catch::Session().run(argc, argv);
}
