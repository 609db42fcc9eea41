// The roll call of a stuck wait (see roll_call.h).
#include "comm/roll_call.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <vector>

namespace shardlab::detail {

namespace {

int env_int(const char* name, int otherwise) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : otherwise;
}

struct Job {  // read once, by leave_start_note, before MPI start-up
  int rank = 0, size = 1, on_this_host = 1;
  std::string dir;  // "" without $SHARDLAB_JOB_DIR
  pid_t launcher = 0;
};
Job& job() {
  static Job j;
  return j;
}

std::string host_name() {
  char h[256] = {};
  return ::gethostname(h, sizeof h - 1) == 0 ? std::string(h) : std::string("?");
}

std::string note_path(const std::string& dir, int rank) { return dir + "/started." + std::to_string(rank); }

struct Note {
  bool found = false;
  std::string host;
  long pid = 0;
};

Note read_note(const std::string& dir, int rank) {
  Note n;
  std::ifstream in(note_path(dir, rank));
  n.found = static_cast<bool>(in >> n.host >> n.pid);
  return n;
}

enum class State { running, stopped, gone };

// A process of this host: stopped (state T or t in /proc/PID/stat), gone, or running (also where there is no
// /proc: only "gone" can be told there).
State process_state(long pid) {
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return State::gone;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return State::running;
  const size_t close = line.rfind(')');  // the command name may hold spaces and parentheses
  if (close == std::string::npos || close + 2 >= line.size()) return State::running;
  const char s = line[close + 2];
  return s == 'T' || s == 't' ? State::stopped : s == 'Z' || s == 'X' ? State::gone : State::running;
}

}  // namespace

std::string rank_list(const std::vector<int>& ranks) {
  std::string s = ranks.size() > 1 ? "ranks " : "rank ";
  for (size_t i = 0; i < ranks.size(); ++i)
    s += (i == 0 ? "" : i + 1 == ranks.size() ? " and " : ", ") + std::to_string(ranks[i]);
  return s;
}

void leave_start_note() {
  Job& j = job();
  j.rank = env_int("OMPI_COMM_WORLD_RANK", env_int("PMIX_RANK", env_int("PMI_RANK", 0)));
  j.size = env_int("OMPI_COMM_WORLD_SIZE", env_int("PMI_SIZE", 1));
  j.on_this_host = env_int("OMPI_COMM_WORLD_LOCAL_SIZE", j.size);
  const char* d = std::getenv("SHARDLAB_JOB_DIR");
  j.dir = d ? d : "";
  j.launcher = ::getppid();
  if (j.dir.empty()) return;
  const std::string path = note_path(j.dir, j.rank);
  {  // written whole under another name, then renamed: a reader never sees half a note
    std::ofstream out(path + ".part");
    out << host_name() << ' ' << ::getpid() << '\n';
  }
  std::rename((path + ".part").c_str(), path.c_str());
}

bool claim_the_word(bool otherwise) {
  const std::string& dir = job().dir;
  if (dir.empty()) return otherwise;
  const int fd = ::open((dir + "/spoken").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 && errno == ENOENT) return otherwise;  // not on this host
  if (fd < 0) return errno != EEXIST;               // a directory that cannot be written: speak rather than stay silent
  ::close(fd);
  return true;
}

bool launcher_gone() { return job().launcher != 0 && ::getppid() != job().launcher; }

RollCall call_the_roll(const std::string& what, double seconds) {
  const int me = job().rank, world = job().size, on_this_host = job().on_this_host;
  const std::string& dir = job().dir;
  const std::string here = host_name();
  char limit[32];
  std::snprintf(limit, sizeof limit, "%.0f", std::ceil(seconds));
  const std::string flag = std::string(" (--comm-timeout ") + limit + ")";

  std::vector<Note> notes(static_cast<size_t>(std::max(world, 1)));
  bool other_hosts_seen = false;
  for (int r = 0; r < world && !dir.empty(); ++r) {
    notes[r] = read_note(dir, r);
    other_hosts_seen = other_hosts_seen || (notes[r].found && notes[r].host != here);
  }
  // An absent note means "never started" only when every rank's note could be here: all ranks on this host, or
  // notes from other hosts seen (a shared directory).
  const bool all_seen = !dir.empty() && (on_this_host >= world || other_hosts_seen);
  std::vector<int> unstarted, stopped, gone, waiting;
  for (int r = 0; r < world; ++r) {
    const Note& n = notes[r];
    if (r == me || dir.empty()) {
      waiting.push_back(r);
    } else if (!n.found) {
      (all_seen ? unstarted : waiting).push_back(r);
    } else if (n.host == here) {
      const State s = process_state(n.pid);
      (s == State::stopped ? stopped : s == State::gone ? gone : waiting).push_back(r);
    } else {
      waiting.push_back(r);
    }
  }
  std::vector<int> missing = unstarted;
  missing.insert(missing.end(), stopped.begin(), stopped.end());
  missing.insert(missing.end(), gone.begin(), gone.end());
  std::sort(missing.begin(), missing.end());

  RollCall call{"", waiting.empty() || waiting.front() == me, me};
  if (!missing.empty()) {
    std::string why;  // each missing rank's reason, "; " between them
    auto add = [&why](const std::string& part) { why += (why.empty() ? "" : "; ") + part; };
    if (!unstarted.empty()) add(rank_list(unstarted) + " never started (stopped, stuck or gone before start-up)");
    for (int r : stopped)
      add("rank " + std::to_string(r) + " (pid " + std::to_string(notes[r].pid) +
          ") is stopped (SIGSTOP or Ctrl-Z; kill -CONT resumes it)");
    for (int r : gone) add("rank " + std::to_string(r) + " (pid " + std::to_string(notes[r].pid) + ") has ended");
    call.line = rank_list(missing) + " never arrived: " + rank_list(waiting) + " waited " + limit + " s in " + what +
                " — " + why + flag;
  } else if (all_seen) {
    call.line = "rank " + std::to_string(me) + " waited " + limit + " s in " + what +
                ", which cannot be interrupted, while every rank is running: one is stuck or never calls it" + flag;
  } else {
    call.line =
        "rank " + std::to_string(me) + " waited " + limit + " s in " + what +
        ", which cannot be interrupted: a rank never arrived (stopped, stuck or dead; " +
        (dir.empty() ? "which one is told only under scripts/mpirun.sh" : "ranks of other hosts are not seen here") +
        ")" + flag;
  }
  return call;
}

}  // namespace shardlab::detail
