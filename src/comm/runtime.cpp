// MPI start-up and shut-down (see runtime.h).
#include "comm/runtime.h"

#include <mpi.h>

#include <cstdlib>

#include "comm/mpi_handle.h"

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
  detail::watchdog_init();
}

Runtime::~Runtime() {
  if (mpi_) MPI_Finalize();
}

std::string Runtime::agree(const std::string& root_value) const {
  if (!mpi_ || size_ == 1) return root_value;
  unsigned long n = root_value.size();
  MPI_Bcast(&n, 1, MPI_UNSIGNED_LONG, 0, MPI_COMM_WORLD);
  std::string v = rank_ == 0 ? root_value : std::string(n, '\0');
  MPI_Bcast(v.data(), static_cast<int>(n), MPI_CHAR, 0, MPI_COMM_WORLD);
  return v;
}

void Runtime::abort(int code) const {
  if (mpi_ && size_ > 1) MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

}  // namespace shardlab
