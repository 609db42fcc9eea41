// The alarm around a blocking MPI call (see blocking_call.h). One process-wide alarm (SIGALRM), set and
// cleared around each call; its handler only writes and exits (async-signal-safe).
#include "comm/blocking_call.h"

#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "comm/mpi_handle.h"

namespace shardlab::detail {

namespace {

const char* stuck_in = "";
int seconds = 0, world_rank = 0;

void rang(int) {
  char msg[400];
  const int n = std::snprintf(msg, sizeof msg,
                              "shardlab: error (rank %d): stuck %d s (the comm timeout) in %s, which cannot be "
                              "interrupted: a rank never arrived there (stopped, stuck or dead); the job ends\n",
                              world_rank, seconds, stuck_in);
  if (n > 0) (void)!::write(2, msg, static_cast<size_t>(n < int(sizeof msg) ? n : int(sizeof msg) - 1));
  ::_exit(3);
}

}  // namespace

BlockingCall::BlockingCall(const char* what) {
  const double timeout = comm_timeout_seconds();
  if (!(timeout > 0)) return;                              // 0: wait for ever, as asked
  const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");  // known before MPI_Init too
  world_rank = rank ? std::atoi(rank) : 0;
  seconds = static_cast<int>(std::ceil(timeout));
  stuck_in = what;
  std::signal(SIGALRM, rang);
  ::alarm(static_cast<unsigned>(seconds + (world_rank == 0 ? 0 : 2)));
}

BlockingCall::~BlockingCall() {
  ::alarm(0);
  std::signal(SIGALRM, SIG_DFL);
}

}  // namespace shardlab::detail
