// The MPI error handler (see mpi_errors.h).
#include "comm/mpi_errors.h"

#include <mpi.h>

#include <cstdio>

#include "comm/communicator.h"

namespace shardlab {

namespace {
std::string& context() {
  static std::string c;
  return c;
}

void on_mpi_error(MPI_Comm*, int* code, ...) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(*code, text, &len);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const std::string& wait = detail::current_wait();
  std::fprintf(stderr, "shardlab: error (rank %d): MPI failed: %s, %s%s\n", rank, text,
               wait.empty() ? "outside any wait" : ("while waiting in " + wait).c_str(), context().c_str());
  abort_all(3);
}
}  // namespace

void set_mpi_error_context(const std::string& c) { context() = c.empty() ? "" : " " + c; }

namespace detail {
void install_mpi_error_handler() {
  MPI_Errhandler handler;
  MPI_Comm_create_errhandler(on_mpi_error, &handler);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, handler);
}
}  // namespace detail

}  // namespace shardlab
