// The progress engine and its watchdog (see mpi_handle.h), the pool of ring receive buffers, and abort_all.
//
// Why an engine: a ring step can only be posted by the rank that owns it, when that rank runs code. If
// rank A waits for bucket 1 while rank B waits for bucket 2, and each needs the other to forward a chunk
// of the bucket it is NOT waiting for, a wait that only advanced its own operation would deadlock. So
// every wait on this rank advances every operation in flight (the list below and the buffer pool are the
// only global state in src/comm; both are per process, like MPI's own progress engine).
//
// Why a watchdog: a peer that crashes takes the job down (mpirun aborts it when a rank exits without
// MPI_Finalize), but a peer that is stuck — in an infinite loop, stopped, or in a different collective —
// would hang everyone forever. Every wait here polls, so it can also look at the clock (watchdog.cpp
// says what happens then).
// Leaves out: a progress thread (MPI is initialised without thread support).
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "comm/communicator.h"
#include "comm/mpi_errors.h"
#include "comm/mpi_handle.h"
#include "comm/trace.h"
#include "core/machine.h"

namespace shardlab {
namespace detail {

namespace {
std::vector<InFlight*>& in_flight() {
  static std::vector<InFlight*> ops;
  return ops;
}

// Ranks on this machine (from the launcher's environment) versus cores (core/machine.h). Unknown: assume
// oversubscribed.
bool oversubscribed() {
  static const bool over = [] {
    const int ranks = launcher_local_ranks(), cores = online_cpus();
    return ranks == 0 || cores == 0 || ranks > cores;
  }();
  return over;
}

}  // namespace

InFlight::~InFlight() { engine_remove(this); }

void InFlight::finish() {
  done_ = true;
  if (trace && trace->enabled()) trace->add(trace_name, "comm", t0_us, trace->now_us(), lane);
}

void engine_add(InFlight* op) { in_flight().push_back(op); }

void engine_remove(InFlight* op) {
  auto& v = in_flight();
  v.erase(std::remove(v.begin(), v.end(), op), v.end());
}

void engine_drive() {
  auto& v = in_flight();
  // advance() never adds or removes operations, so plain indexing is safe; finished ones leave.
  for (size_t i = 0; i < v.size();) {
    if (v[i]->advance()) {
      v[i] = v.back();
      v.pop_back();
    } else {
      ++i;
    }
  }
}

namespace {
const std::string kNoWait;
const std::string* waiting_in = &kNoWait;  // what the rank waits in now, for an MPI error's line (mpi_errors.h)
}  // namespace

const std::string& current_wait() { return *waiting_in; }

void spin_until(const std::function<bool()>& done, const std::function<int()>& peer, const std::string& what) {
  struct Waiting {  // the wait in progress (waits never nest: one rank, one thread)
    explicit Waiting(const std::string& w) { waiting_in = &w; }
    ~Waiting() { waiting_in = &kNoWait; }
  } waiting(what);
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  const double limit = comm_timeout_seconds();
  // How a rank waits. A short wait (a ring chunk in flight) is polled without pause, as MPI's own waits
  // do: sleeping would stretch every ring step. A long one (the peer is still in its backward pass, or
  // is another job's rank on a shared core) sleeps between polls, so that the core goes to whoever has
  // work. When ranks outnumber cores (mpirun --oversubscribe) the peer may need this very core: yield
  // between polls at once, and start sleeping sooner.
  const bool over = oversubscribed();
  const double poll_freely = over ? 100e-6 : 1e-3;  // seconds of waiting before the sleeps begin
  const timespec nap{0, 50 * 1000};                 // 50 µs: a wait's end is seen at most ~0.1 ms late
  for (unsigned polls = 0;; ++polls) {
    engine_drive();
    if (done()) return;
    const double waited = std::chrono::duration<double>(clock::now() - start).count();
    if (waited > poll_freely)
      nanosleep(&nap, nullptr);
    else if (over || (polls & 1023) == 1023)
      sched_yield();
    if (limit > 0 && waited > limit) watchdog_fire(what, peer(), waited);
  }
}

void wait_op(InFlight& op) {
  spin_until([&] { return op.advance(); }, [&] { return op.waiting_for_world(); }, op.what);
}

void wait_requests(std::vector<MPI_Request>& reqs, const std::vector<int>& peers, const std::string& what) {
  if (reqs.empty()) return;
  spin_until(
      [&] {
        int flag = 0;
        MPI_Testall(static_cast<int>(reqs.size()), reqs.data(), &flag, MPI_STATUSES_IGNORE);
        return flag != 0;
      },
      [&] {
        for (size_t i = 0; i < reqs.size(); ++i)
          if (reqs[i] != MPI_REQUEST_NULL) return peers[i];
        return -1;
      },
      what);
}

namespace {
struct FreeBuffer {
  char* p;
  size_t cap;
};
std::vector<FreeBuffer>& free_list() {
  static std::vector<FreeBuffer> v;
  return v;
}
}  // namespace

void Scratch::acquire(size_t bytes) {
  reset();
  if (bytes == 0) return;
  auto& fl = free_list();
  size_t best = fl.size();  // the smallest free buffer that is large enough
  for (size_t i = 0; i < fl.size(); ++i)
    if (fl[i].cap >= bytes && (best == fl.size() || fl[i].cap < fl[best].cap)) best = i;
  if (best < fl.size()) {
    p_ = fl[best].p;
    cap_ = fl[best].cap;
    fl.erase(fl.begin() + static_cast<long>(best));
  } else {
    p_ = new char[bytes];  // uninitialised: MPI writes it before we read it
    cap_ = bytes;
  }
}

void Scratch::reset() {
  if (p_) {
    auto& fl = free_list();
    fl.push_back({p_, cap_});
    if (fl.size() > 8) {  // keep the 8 largest
      auto smallest = std::min_element(fl.begin(), fl.end(),
                                       [](const FreeBuffer& a, const FreeBuffer& b) { return a.cap < b.cap; });
      delete[] smallest->p;
      fl.erase(smallest);
    }
  }
  p_ = nullptr;
  cap_ = 0;
}

int mpi_count(size_t n, const char* what) {
  if (n > static_cast<size_t>(INT32_MAX)) {
    std::fprintf(stderr, "shardlab: error: %s of %zu elements exceeds MPI's int count\n", what, n);
    abort_all(2);
  }
  return static_cast<int>(n);
}

}  // namespace detail

void abort_all(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  int init = 0, fin = 0, size = 1;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) {
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > 1) MPI_Abort(MPI_COMM_WORLD, code);
  }
  std::exit(code);
}

}  // namespace shardlab
