// CPUs online and ranks on this machine (see machine.h).
#include "core/machine.h"

#include <unistd.h>

#include <cstdlib>

namespace shardlab {

int online_cpus() {
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 0;
}

int launcher_local_ranks() {
  const char* e = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  if (!e) e = std::getenv("MPI_LOCALNRANKS");
  const int n = e ? std::atoi(e) : 0;
  return n > 0 ? n : 0;
}

}  // namespace shardlab
