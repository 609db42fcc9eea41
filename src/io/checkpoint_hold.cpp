// A reader's hold on one checkpoint step (see checkpoint_hold.h): a shared flock on the step directory, taken
// after resolving `latest` and checked to still be the directory at that path.
#include "io/checkpoint_hold.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>

#include "io/checkpoint.h"

namespace shardlab {

namespace {

// Is the directory open as fd still the one at `path` (not renamed away by a prune since it was opened)?
bool still_at(int fd, const std::string& path) {
  struct stat open_one {
  }, named{};
  return ::fstat(fd, &open_one) == 0 && ::stat(path.c_str(), &named) == 0 && open_one.st_dev == named.st_dev &&
         open_one.st_ino == named.st_ino;
}

// Does DIR/latest now name another step than `was` (a live run saved since, and may have pruned `was`)?
bool latest_moved(const std::string& dir, const std::string& was) {
  try {
    const std::string now = read_latest(dir);
    return !now.empty() && now != was;
  } catch (const std::runtime_error&) {
    return false;
  }
}

}  // namespace

CheckpointHold::CheckpointHold(const std::string& dir_or_step) {
  std::string first;  // the step `latest` named at the first attempt
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::string named;  // the step `latest` names ("" when given a step directory)
    std::string step;
    try {
      step = resolve_step_dir(dir_or_step, &named);
    } catch (const std::runtime_error&) {
      // `latest` named a step that a live run pruned before it could be looked at: the run's newer step, once.
      if (attempt > 0 || named.empty() || !latest_moved(dir_or_step, named)) throw;
      first = named;
      continue;
    }
    if (first.empty()) first = named;
    const int fd = ::open(step.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 && errno != ENOENT) {  // not ours to lock (permissions): read as before, the reads say what is wrong
      step_dir_ = step;
      return;
    }
    if (fd >= 0) {
      if (::flock(fd, LOCK_SH | LOCK_NB) == 0) {
        if (still_at(fd, step)) {
          fd_ = fd;
          step_dir_ = step;
          return;
        }
      } else if (errno != EWOULDBLOCK) {  // a file system without flock: read unheld, as before
        ::close(fd);
        step_dir_ = step;
        return;
      }
      ::close(fd);  // pruned while we looked (or being pruned right now)
    }
    if (named.empty()) break;  // a step directory named directly: no newer one to turn to
  }
  throw std::runtime_error("checkpoint " + dir_or_step + ": " +
                           (first.empty() ? "the step directory was removed (pruned) while it was being opened"
                                          : "the step `latest` named (" + first +
                                                ") was pruned before it could be read, and its successor too: a live "
                                                "run saves and prunes here faster than it can be read; try again, or "
                                                "name a step directory it keeps"));
}

CheckpointHold::~CheckpointHold() { release(); }

CheckpointHold::CheckpointHold(CheckpointHold&& o) noexcept : step_dir_(std::move(o.step_dir_)), fd_(o.fd_) {
  o.fd_ = -1;
  o.step_dir_.clear();
}

CheckpointHold& CheckpointHold::operator=(CheckpointHold&& o) noexcept {
  if (this != &o) {
    release();
    step_dir_ = std::move(o.step_dir_);
    fd_ = o.fd_;
    o.fd_ = -1;
    o.step_dir_.clear();
  }
  return *this;
}

void CheckpointHold::release() {
  if (fd_ >= 0) ::close(fd_);  // closing drops the lock
  fd_ = -1;
}

}  // namespace shardlab
