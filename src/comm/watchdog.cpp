// The watchdog: what happens when a rank has waited longer than the comm timeout for a peer.
//
// A rank that waits cannot tell by itself whether the peer it waits for is the culprit: in a ring, rank 1
// waits for rank 0, which waits for rank 3, which is stopped. So every rank whose wait times out tells
// every other rank what it is waiting in (op, axis, collective number) and for whom, on a communicator of
// the watchdog's own, and listens for the same from the others for a short grace period. The ranks that
// never report are the ones that never arrived; if every rank reports, they are all waiting (in
// different collectives: a deadlock). The lowest rank that reported prints ONE message naming them, and
// ends the job; the others wait for that end.
// Leaves out: OpenMPI's own notice when the job is aborted (it can only be silenced with mpirun -q, which
// would also silence its report of a rank killed by a signal).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "comm/communicator.h"
#include "comm/mpi_handle.h"
#include "comm/roll_call.h"
#include "core/error_line.h"

namespace shardlab {
namespace detail {

namespace {

MPI_Comm& watchdog_comm() {
  static MPI_Comm c = MPI_COMM_NULL;
  return c;
}

// The default timeout: $SHARDLAB_COMM_TIMEOUT, checked like the flag (0 = never, else at least 1 s: a
// shorter one would end healthy jobs), else 120 s. A bad value ends the program: a watchdog silently
// switched off would let a stuck rank hang the job for ever. It is read before MPI starts, so the ranks
// cannot agree on who speaks: rank 0 says it at once; another rank waits a few seconds first and then
// says it naming itself — when every rank has the value, rank 0's exit ends the job before that (one
// line), and when only this rank has it, its line is the job's only one.
double& timeout_setting() {
  static double t = [] {
    const char* e = std::getenv("SHARDLAB_COMM_TIMEOUT");
    if (!e) return 120.0;
    char* end = nullptr;
    const double v = std::strtod(e, &end);
    if (!*e || *end || !std::isfinite(v) || v < 0 || (v > 0 && v < 1)) {
      const char* rank = std::getenv("OMPI_COMM_WORLD_RANK");
      const bool first = !rank || std::strcmp(rank, "0") == 0;
      if (!first) std::this_thread::sleep_for(std::chrono::seconds(5));
      print_line("shardlab", first ? "error" : "error (rank " + std::string(rank) + ")",
                 "SHARDLAB_COMM_TIMEOUT must be 0 (never) or at least 1 second, got '" + std::string(e) + "'");
      std::exit(2);
    }
    return v;
  }();
  return t;
}

constexpr double kGraceSeconds = 3;
constexpr int kTag = 7;

struct Report {  // one waiting rank's state, as sent to the others
  int32_t rank, waits_for;
  double waited;
  char what[112];
};

std::string message(const std::vector<Report>& got, const std::vector<bool>& reported, double timeout) {
  std::vector<int> missing, waiting;
  for (size_t r = 0; r < got.size(); ++r) (reported[r] ? waiting : missing).push_back(static_cast<int>(r));
  std::string where;  // what the waiting ranks wait in, and for whom
  bool same = true;
  for (int r : waiting) same = same && std::strcmp(got[r].what, got[waiting[0]].what) == 0;
  for (int r : waiting) {
    if (same && r != waiting[0]) continue;
    const Report& w = got[r];
    where += std::string(where.empty() ? (same ? " in " : ": ") : "; ") +
             (same ? "" : "rank " + std::to_string(r) + " in ") + w.what +
             (w.waits_for >= 0 && !same ? " for rank " + std::to_string(w.waits_for) : "");
  }
  char limit[32];
  std::snprintf(limit, sizeof limit, "%.0f", timeout);
  if (missing.empty())
    return "every rank is waiting and none can go on (a deadlock: each waits for a message or collective another "
           "rank is not in)" +
           where;
  return rank_list(missing) + " never arrived: " + rank_list(waiting) + " waited " + limit + " s" + where +
         " — stuck or gone (--comm-timeout " + limit + ")";
}

}  // namespace

void watchdog_init() {  // under Runtime's guard of MPI start-up (blocking_call.h)
  if (watchdog_comm() == MPI_COMM_NULL) MPI_Comm_dup(MPI_COMM_WORLD, &watchdog_comm());
}

double comm_timeout_seconds() { return timeout_setting(); }

void watchdog_fire(const std::string& what, int waiting_for, double waited) {
  MPI_Comm c = watchdog_comm();
  int me = 0, n = 1;
  if (c != MPI_COMM_NULL) {
    MPI_Comm_rank(c, &me);
    MPI_Comm_size(c, &n);
  }
  std::vector<Report> got(n);
  std::vector<bool> reported(n, false);
  Report& mine = got[me];
  mine.rank = me;
  mine.waits_for = waiting_for;
  mine.waited = waited;
  std::snprintf(mine.what, sizeof mine.what, "%s", what.c_str());
  reported[me] = true;
  std::vector<MPI_Request> sends, recvs(n, MPI_REQUEST_NULL);
  for (int r = 0; r < n; ++r) {
    if (r == me) continue;
    sends.emplace_back();
    MPI_Isend(&mine, sizeof(Report), MPI_BYTE, r, kTag, c, &sends.back());
    MPI_Irecv(&got[r], sizeof(Report), MPI_BYTE, r, kTag, c, &recvs[r]);
  }
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  int heard = 1;
  while (heard < n && elapsed() < kGraceSeconds) {
    for (int r = 0; r < n; ++r) {
      int flag = 0;
      if (reported[r]) continue;
      MPI_Test(&recvs[r], &flag, MPI_STATUS_IGNORE);
      if (flag) reported[r] = true, ++heard;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  int reporter = 0;
  while (!reported[reporter]) ++reporter;
  if (me == reporter) {
    if (!claim_the_word(true)) abort_all(3);  // a rank stuck in an MPI call has already said why (comm/roll_call.h)
    std::fprintf(stderr, "shardlab: error: %s\n", message(got, reported, comm_timeout_seconds()).c_str());
    std::fflush(stderr);
    abort_all(3);
  }
  std::this_thread::sleep_for(std::chrono::seconds(10));  // the reporter ends the job; if it cannot, we do
  abort_all(3);
}

}  // namespace detail

void set_comm_timeout(double seconds) { detail::timeout_setting() = seconds; }

}  // namespace shardlab
