// Who is missing: when a blocking MPI call (comm/blocking_call.h) outlasts the comm timeout, the roll call says
// which ranks never arrived in it. Before MPI start-up each rank leaves a note (rank, host, pid) in the job's own
// directory ($SHARDLAB_JOB_DIR, which scripts/mpirun.sh makes for each job); a rank with no note never started,
// and a rank of this host whose process is stopped (SIGSTOP, Ctrl-Z) or gone is not coming. The lowest rank still
// waiting is the one to say so. Without the directory (mpirun started by hand), or when a rank may be on a host
// whose notes are not seen here, the line says what it cannot know. However many ranks of one host give up waiting,
// one line is printed: the first to claim the word says it (claim_the_word); without the directory, the others
// speak only if that line has not ended the job 3 s later. Part of src/comm/.
#pragma once
#include <string>
#include <vector>

namespace shardlab::detail {

// "rank 2", "ranks 0, 1 and 3": how every line about a stuck wait names ranks (this one and the watchdog's).
std::string rank_list(const std::vector<int>& ranks);

// This rank's note, once, before MPI start-up (nothing without $SHARDLAB_JOB_DIR). It also reads, once, what the
// roll call needs from the environment (rank, sizes, the directory): MPI start-up changes the environment, and the
// roll call runs on another thread.
void leave_start_note();

struct RollCall {
  std::string line;  // "rank 1 never arrived: rank 0 waited 5 s in MPI start-up (MPI_Init) — rank 1 (pid 42) is
                     // stopped (…) (--comm-timeout 5)"
  bool speaker;      // this rank is the lowest one still waiting
  int rank;          // this rank (of the world)
};
// The roll call of a wait in `what` that has lasted `seconds`.
RollCall call_the_roll(const std::string& what, double seconds);

// The right to print the job's one line about a stuck wait: true for the first rank of the job to ask (a file
// made with O_EXCL in the job's directory), false for every later one. Where this host has no such directory
// (mpirun started by hand, or a rank on another host than mpirun's): `otherwise`.
bool claim_the_word(bool otherwise);

// The launcher that started this rank (mpirun) has gone: the job is over, and this rank's line would be a late one.
bool launcher_gone();

}  // namespace shardlab::detail
