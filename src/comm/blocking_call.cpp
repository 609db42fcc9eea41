// The timer around a blocking MPI call (see blocking_call.h): one watcher thread, started at the first guard,
// waiting on a condition variable for a guard to arm it and for that guard to end or its deadline to pass.
#include "comm/blocking_call.h"

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "comm/mpi_handle.h"
#include "comm/roll_call.h"
#include "core/error_line.h"

namespace shardlab::detail {

namespace {

using Clock = std::chrono::steady_clock;

struct Watcher {
  std::mutex mutex;
  std::condition_variable changed;
  const char* what = nullptr;  // the armed call; nullptr: none
  double seconds = 0;
  Clock::time_point deadline;
  uint64_t call = 0;  // counts the guards, so that a wait knows whether its call is still the armed one
  bool started = false;
};

// Never destroyed: the thread may still wait on it while the process exits.
Watcher& watcher() {
  static Watcher* w = new Watcher;
  return *w;
}

[[noreturn]] void say_and_exit(const RollCall& roll) {
  // Not after the job is over (a rank stopped, then resumed by mpirun's SIGCONT as it ends the job), nor after
  // another rank has said why.
  if (!launcher_gone() && claim_the_word(roll.speaker))
    print_line("shardlab", "error", roll.line);  // the line names every rank; which one says it does not matter
  ::_exit(3);
}

void watch() {
  Watcher& w = watcher();
  std::unique_lock<std::mutex> lock(w.mutex);
  for (;;) {
    w.changed.wait(lock, [&w] { return w.what != nullptr; });
    const uint64_t call = w.call;
    const auto same_call = [&w, call] { return w.what == nullptr || w.call != call; };
    if (w.changed.wait_until(lock, w.deadline, same_call)) continue;  // the call ended in time
    const std::string what = w.what;
    const double seconds = w.seconds;
    lock.unlock();
    const RollCall roll = call_the_roll(what, seconds);
    lock.lock();
    if (same_call()) continue;  // the call ended while the roll was called
    // Not the speaker: the speaker's line ends the job within moments; only if it has not, 3 s later, this one.
    if (!roll.speaker && w.changed.wait_for(lock, std::chrono::seconds(3), same_call)) continue;
    lock.unlock();
    say_and_exit(roll);
  }
}

}  // namespace

BlockingCall::BlockingCall(const char* what) {
  const double timeout = comm_timeout_seconds();
  if (!(timeout > 0) || timeout > 1e9) return;  // 0: wait for ever, as asked (and 30 years is for ever too)
  Watcher& w = watcher();
  std::lock_guard<std::mutex> lock(w.mutex);
  if (!w.started) {
    std::thread(watch).detach();
    w.started = true;
  }
  w.what = what;
  w.seconds = timeout;
  w.deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout));
  ++w.call;
  w.changed.notify_all();
}

// Disarmed without waking the watcher: it finds the call over at the deadline (one wake-up per call, not two).
BlockingCall::~BlockingCall() {
  Watcher& w = watcher();
  std::lock_guard<std::mutex> lock(w.mutex);
  w.what = nullptr;
}

}  // namespace shardlab::detail
