// Catch2 (v2) entry point for the single-process unit tests, on the BLAS kernel every shardlab process
// runs (core/blas_kernel.h).
#include "../common/catch_session.h"

#include "core/blas_kernel.h"

int main(int argc, char** argv) {
  shardlab::use_best_blas_kernel(argv);
  return shardlab::test::run_catch(argc, argv).status;
}
