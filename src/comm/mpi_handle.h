// Private to src/comm: the MPI side of the Communicator — the handle, the per-type table (datatype,
// sum kernel), the operations that can be in flight, and the progress engine with its watchdog.
// Nothing outside src/comm includes this file (it is the only place <mpi.h> is visible).
#pragma once
// C API only: Open MPI's deprecated C++ bindings add nothing here and trip -Wcast-function-type.
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/comm_ledger.h"
#include "core/exact_sum.h"

namespace shardlab {

class Trace;
class MemoryLedger;

struct CommHandle {
  MPI_Comm comm = MPI_COMM_NULL;  // MPI_COMM_NULL: a world of one without MPI
};

namespace detail {

// Everything the type-erased collectives need to know about an element type. The sum kernel runs once
// per chunk over a whole array (a tight loop the compiler vectorises), never once per element.
struct TypeOps {
  size_t bytes;                                      // sizeof(T)
  MPI_Datatype type;                                 // the matching MPI datatype
  void (*add)(void* acc, const void* in, size_t n);  // acc[i] = acc[i] + in[i]  (bf16: round after each add)
  MPI_Op (*sum_op)();  // MPI_SUM, the bf16 or ExactSum user op, or MPI_MAX (CommImpl::mpi)
};
template <class T>
const TypeOps& type_ops();
template <>
const TypeOps& type_ops<uint16_t>();  // bf16: widen, add, round (types.cpp)
template <>
const TypeOps& type_ops<ExactSum>();  // 32 bytes, "added" by exact_merge (types.cpp)
template <class T>
const TypeOps& max_ops();  // float, double: `add` keeps the larger (an all-reduce of maxima)

// One operation in flight: a ring collective stepping through its messages, or an MPI request.
class InFlight {
 public:
  virtual ~InFlight();
  // Tests what has arrived, does the local work (reduce), posts the next messages. Never blocks.
  // Returns true once complete (and keeps returning true).
  virtual bool advance() = 0;
  // The member whose message it is waiting for now (for the watchdog's message), -1 if none.
  virtual int waiting_for() const { return -1; }
  int waiting_for_world() const {  // the same as a world rank
    const int m = waiting_for();
    return m >= 0 && m < static_cast<int>(world_ranks.size()) ? world_ranks[m] : -1;
  }
  bool done() const { return done_; }

  std::string what;              // "all_reduce on dp (collective #12 of its group)" (watchdog)
  std::vector<int> world_ranks;  // member → world rank, of the operation's communicator
  Trace* trace = nullptr;        // trace event at completion, if enabled
  std::string trace_name;        // "all_reduce dp 1.2 MB"
  int lane = 0;                  // 0 blocking, 1 non-blocking
  double t0_us = 0;

 protected:
  void finish();  // marks done, adds the trace event, leaves the engine
  bool done_ = false;
};

// The progress engine: every non-blocking operation registers here, and every wait on this rank — a
// blocking collective, a send, a wait(Pending) — keeps advancing all of them while it waits.
void engine_add(InFlight* op);
void engine_remove(InFlight* op);
void engine_drive();  // advance every registered operation once

// Spins until done() is true, driving the engine and yielding the core between polls (ranks outnumber
// cores here). peer() is the world rank waited for (-1: unknown). After the comm timeout (watchdog.cpp)
// the waiting ranks find out together which rank never arrived, one of them says so, and the job ends.
void spin_until(const std::function<bool()>& done, const std::function<int()>& peer, const std::string& what);
void wait_op(InFlight& op);  // spin_until(op.advance())
// Waits for raw requests; peers[i] is the world rank on the other end of reqs[i].
void wait_requests(std::vector<MPI_Request>& reqs, const std::vector<int>& peers, const std::string& what);

// The watchdog (watchdog.cpp): its own duplicate of the world, made at start-up by Runtime, so its
// messages never meet the program's; the timeout; and what happens when a wait exceeds it.
void watchdog_init();  // collective over the world, right after MPI_Init
double comm_timeout_seconds();
[[noreturn]] void watchdog_fire(const std::string& what, int waiting_for_world_rank, double waited_s);

// A ring collective about to start (ring.cpp). The ring path uses MPI_Isend/Irecv/Test only.
struct RingSpec {
  MPI_Comm comm;
  int rank, size, tag;
  const TypeOps* type;
  bool reduce_scatter, all_gather;  // all_reduce = both
  CommCall* record;                 // ledger record (may be null)
  bool prev_inter, next_inter;      // are r-1 and r+1 on another node
  MemoryLedger* mem;                // books the receive buffer as Mem::comm_buffer (may be null)
};
std::unique_ptr<InFlight> make_ring_op(const RingSpec& spec, void* buf, const std::vector<size_t>& counts);

// The same three collectives through MPI's built-ins (mpi_builtin.cpp): blocking, the MPI call itself (the
// returned operation is already complete); non-blocking, one MPI_I* call and its request.
enum class Builtin { reduce_scatter, all_gather, all_reduce };
std::unique_ptr<InFlight> make_mpi_op(Builtin what, MPI_Comm comm, int rank, const TypeOps& t, void* buf,
                                      const std::vector<size_t>& counts, bool blocking);

// The element types every template of the Communicator is instantiated for (bf16 is uint16_t).
#define SHARDLAB_COMM_TYPES(X) \
  X(float) X(double) X(uint16_t) X(int32_t) X(int64_t) X(uint64_t) X(uint8_t) X(char) X(ExactSum)

// Receive buffers for the ring, reused across calls: a fresh multi-MB allocation every step would
// cost a page fault per 4 KB. Buffers return to a per-process free list (kept for the process's life).
class Scratch {
 public:
  Scratch() = default;
  void acquire(size_t bytes);  // a buffer of at least this many bytes
  ~Scratch() { reset(); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  char* data() { return p_; }
  void reset();  // back to the free list
 private:
  char* p_ = nullptr;
  size_t cap_ = 0;
};

// Ledger helpers that accept a null record (no ledger attached).
inline void ledger_send(CommCall* c, size_t bytes, bool inter) {
  if (c) CommLedger::add_send(*c, bytes, inter);
}
inline void ledger_recv(CommCall* c, size_t bytes, bool inter) {
  if (c) CommLedger::add_recv(*c, bytes, inter);
}

// MPI counts are int: refuse (clearly) what does not fit.
int mpi_count(size_t n, const char* what);

}  // namespace detail
}  // namespace shardlab
