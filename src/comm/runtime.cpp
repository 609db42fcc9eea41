// MPI start-up and shut-down (see runtime.h).
#include "comm/runtime.h"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "comm/blocking_call.h"
#include "comm/communicator.h"
#include "comm/mpi_errors.h"
#include "comm/mpi_handle.h"
#include "comm/roll_call.h"

namespace shardlab {

namespace {
bool launched_by_mpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") || std::getenv("PMIX_RANK");
}

// The comm timeout: the command line's --comm-timeout (read here, before the flags are parsed), else
// $SHARDLAB_COMM_TIMEOUT, else 120 s. It holds from start-up on: MPI_Init waits for every rank to start, and a
// rank that never does (stopped, stuck) would keep the others waiting for ever, before any watchdog of ours
// exists (comm/blocking_call.h ends that wait, naming it).
double startup_timeout(int argc, char** argv) {
  double t = detail::comm_timeout_seconds();  // also checks $SHARDLAB_COMM_TIMEOUT
  for (int i = 1; i < argc; ++i) {
    const char* value = nullptr;
    if (std::strcmp(argv[i], "--comm-timeout") == 0 && i + 1 < argc)
      value = argv[i + 1];
    else if (std::strncmp(argv[i], "--comm-timeout=", 15) == 0)
      value = argv[i] + 15;
    char* end = nullptr;
    const double v = value ? std::strtod(value, &end) : -1;
    if (value && end && *end == '\0' && std::isfinite(v) && (v == 0 || v >= 1)) t = v;  // else the parser says why
  }
  return t;
}
}  // namespace

Runtime::Runtime(int& argc, char**& argv) {
  // Every wait from here on, before the command parses its flags too (train agrees on a run id first),
  // ends after the command line's --comm-timeout, not after the default.
  set_comm_timeout(startup_timeout(argc, argv));
  if (!launched_by_mpirun()) return;
  {
    detail::leave_start_note();  // so that a rank that never arrives can be named (comm/roll_call.h)
    detail::BlockingCall guard("MPI start-up (MPI_Init)");
    MPI_Init(&argc, &argv);
    detail::install_mpi_error_handler();  // before any communicator is made: they all inherit it
    detail::watchdog_init();              // a collective too
  }
  mpi_ = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

Runtime::~Runtime() {
  if (!mpi_) return;
  detail::BlockingCall guard("MPI shut-down (MPI_Finalize)");
  MPI_Finalize();
}

std::string Runtime::agree(const std::string& root_value) const {
  if (!mpi_ || size_ == 1) return root_value;
  // Non-blocking broadcasts waited for under the watchdog: a rank stopped before it gets here is named.
  unsigned long n = root_value.size();
  std::vector<MPI_Request> req(1, MPI_REQUEST_NULL);
  MPI_Ibcast(&n, 1, MPI_UNSIGNED_LONG, 0, MPI_COMM_WORLD, &req[0]);
  detail::wait_requests(req, {0}, "agreeing on rank 0's decision (broadcast on world)");
  std::string v = rank_ == 0 ? root_value : std::string(n, '\0');
  MPI_Ibcast(v.data(), static_cast<int>(n), MPI_CHAR, 0, MPI_COMM_WORLD, &req[0]);
  detail::wait_requests(req, {0}, "agreeing on rank 0's decision (broadcast on world)");
  return v;
}

Runtime::Refusal Runtime::first_refusal(int code) const {
  if (!mpi_ || size_ == 1) return code ? Refusal{rank_, code} : Refusal{};
  // One minimum over rank × 256 + code (exit codes are below 256): the lowest refusing rank and its code at once.
  code = code == 0 ? 0 : std::min(std::max(code, 1), 255);  // an exit status
  const int mine = code ? rank_ * 256 + code : std::numeric_limits<int>::max();
  int lowest = mine;
  std::vector<MPI_Request> req(1, MPI_REQUEST_NULL);
  MPI_Iallreduce(&mine, &lowest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &req[0]);
  detail::wait_requests(req, {-1}, "agreeing whether every rank accepted its input (allreduce on world)");
  if (lowest == std::numeric_limits<int>::max()) return {};
  return {lowest / 256, lowest % 256};
}

double Runtime::report_delay_seconds() const {
  const double timeout = mpi_ ? detail::comm_timeout_seconds() : 0;
  return timeout > 0 ? std::min(5.0, std::max(1.0, timeout - 1)) : 5.0;
}

void Runtime::abort(int code) const {
  if (mpi_ && size_ > 1) MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

}  // namespace shardlab
