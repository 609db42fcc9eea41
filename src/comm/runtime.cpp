// MPI start-up and shut-down (see runtime.h).
#include "comm/runtime.h"

#include <mpi.h>

#include <cstdlib>

namespace shardlab {

namespace {
bool launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") || std::getenv("PMIX_RANK");
}
}  // namespace

Runtime::Runtime(int& argc, char**& argv) {
  if (!launched_by_mpirun()) return;
  MPI_Init(&argc, &argv);
  mpi_ = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

Runtime::~Runtime() {
  if (mpi_) MPI_Finalize();
}

void Runtime::abort(int code) const {
  if (mpi_ && size_ > 1) MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

}  // namespace shardlab
