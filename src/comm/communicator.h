// Communicator: one group of ranks along one axis (dp, tp, pp, cp, ep or world) and every way they talk —
// point-to-point messages, the ring collectives of the chapter (C8) written by hand on point-to-point
// messages, their non-blocking forms (for bucketed overlap, C9, and prefetch, C15), and MPI's built-in
// collectives for comparison (CommImpl::mpi). Every call but barrier() leaves one record in the comm ledger
// (bytes per link, intra/inter node) and, when tracing, one event in the trace.
//
// The ring's DETERMINISM contract: reduce-scatter sums chunk c (owned by member c) in the fixed order
// ((x_{c+1} + x_{c+2}) + x_{c+3}) + … + x_c — it depends only on the owner, never on the other chunks'
// counts, on blocking vs non-blocking, or on what else is in flight. That is what makes ZeRO/FSDP
// bit-identical to plain DP with the same buffer split.
//
// All members of a communicator must make the same collective calls in the same order with the same
// counts (as in MPI). No MPI type appears here; the MPI side lives in mpi_handle.h (private to src/comm).
// Environment: SHARDLAB_COMM_TIMEOUT (seconds a wait may take before the watchdog ends the job, default
// 120, 0 = never; set_comm_timeout overrides it), SHARDLAB_RING_SEGMENT (bytes per ring message, default
// 262144, same on every rank).
// Leaves out: topology-aware algorithms (tree/hierarchical all-reduce), GPU-style multi-channel rings,
// thread safety (one thread per rank calls it).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "comm/comm_impl.h"
#include "comm/comm_ledger.h"
#include "core/bf16.h"
#include "core/exact_sum.h"

namespace shardlab {

class Trace;
class MemoryLedger;

struct CommHandle;  // opaque: holds an MPI_Comm (src/comm/mpi_handle.h)

namespace detail {
struct TypeOps;  // element size, MPI datatype and the sum kernel of one element type
class InFlight;  // one operation in flight (a ring collective or an MPI request)
}  // namespace detail

// Node index of every world rank, from the machine's shared-memory domains (MPI_Comm_split_type SHARED),
// numbered 0, 1, … in order of the nodes' lowest rank. {0} when not under MPI. Collective over the world.
std::vector<int> detect_node_of_rank();

class Communicator {
 public:
  // Wraps an existing MPI communicator (the handle is copied; freed on destruction only if owned).
  // node_of_member[i] = node index of member i (empty = everyone on node 0). ledger and trace may be null.
  Communicator(const CommHandle& h, Axis axis, std::vector<int> node_of_member, CommLedger* ledger, Trace* trace,
               CommImpl impl = CommImpl::ring, bool owned = false);
  // Every rank of the job, on a private duplicate of MPI_COMM_WORLD (so collective on the world); a world
  // of one without any MPI call when the process was not started by mpirun.
  static Communicator world(CommLedger* ledger, Trace* trace, std::vector<int> node_of_rank,
                            CommImpl impl = CommImpl::ring);
  // Members with the same color (≥ 0) form one communicator, ordered by key (MPI_Comm_split). Collective.
  // Tags are counted per Communicator object, so each object needs its own MPI communicator: world()
  // and split() always make one; two objects wrapping the SAME handle must not have collectives in flight
  // at the same time.
  // Inherits ledger, trace, impl and memory ledger; node_of_member is derived from this one's.
  Communicator split(int color, int key, Axis axis) const;
  ~Communicator();
  Communicator(Communicator&& o) noexcept;
  Communicator& operator=(Communicator&& o) noexcept;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  Axis axis() const { return axis_; }
  CommImpl impl() const { return impl_; }
  void set_impl(CommImpl impl) { impl_ = impl; }
  int node_of(int member) const { return nodes_[member]; }
  bool inter_node(int member) const { return nodes_[member] != nodes_[rank_]; }  // relative to this rank
  // Optional: book the ring's receive buffer (4 segments, ≤ 1 MB) under Mem::comm_buffer while a collective runs.
  void set_memory_ledger(MemoryLedger* mem) { mem_ = mem; }
  // Book later calls in another comm ledger (e.g. evaluation's traffic apart from training's).
  void set_ledger(CommLedger* ledger) { ledger_ = ledger; }
  // While alive, this communicator's calls are booked with a purpose (CommCall::purpose).
  class Purpose {
   public:
    Purpose(Communicator& c, const char* purpose) : c_(c), before_(c.purpose_) { c.purpose_ = purpose; }
    ~Purpose() { c_.purpose_ = before_; }
    Purpose(const Purpose&) = delete;
    Purpose& operator=(const Purpose&) = delete;

   private:
    Communicator& c_;
    const char* before_;
  };

  // ---- Point to point (blocking). T in {float, double, bf16 (= uint16_t), int32_t, int64_t, uint64_t,
  // uint8_t, char, ExactSum}. User tags must lie in [0, kMaxUserTag]; the tags above are the collectives'.
  static constexpr int kMaxUserTag = 16383;
  template <class T>
  void send(const T* buf, size_t n, int dst, int tag = 0);
  template <class T>
  void recv(T* buf, size_t n, int src, int tag = 0);
  template <class T>
  void sendrecv(const T* sbuf, size_t sn, int dst, T* rbuf, size_t rn, int src, int tag = 0);

  // ---- Collectives on a buffer cut into size() consecutive chunks: counts[r] elements belong to member r
  // (n = Σ counts; chunks may be unequal or empty; counts must be the same on every member). Reductions
  // are sums; bf16 is widened to float, added, and rounded to nearest even after EVERY addition; ExactSums
  // (core/exact_sum.h) are merged, which gives the same bits in any order (the ring's and MPI's alike).
  template <class T>
  void reduce_scatter(T* buf,
                      const std::vector<size_t>& counts);  // after: MY chunk = Σ over members (rest: unspecified)
  template <class T>
  void all_gather(T* buf, const std::vector<size_t>& counts);  // before: my chunk valid; after: all chunks valid
  template <class T>
  void all_reduce(T* buf, const std::vector<size_t>& counts);  // reduce_scatter + all_gather, one ledger record
  template <class T>
  void all_reduce(T* buf, size_t n);  // even chunks (first n % size get one more)
  // The element-wise maximum over members (float, double), booked as an all-reduce (the same messages).
  template <class T>
  void all_reduce_max(T* buf, size_t n);
  template <class T>
  void broadcast(T* buf, size_t n, int root);  // ring pipeline from root (see p2p.cpp)
  // Chunk d of sbuf (scounts[d] elements) goes to member d; chunk s of rbuf (rcounts[s]) comes from member s.
  // sbuf and rbuf must not overlap; scounts[rank()] == rcounts[rank()].
  template <class T>
  void all_to_all_v(const T* sbuf, const std::vector<size_t>& scounts, T* rbuf, const std::vector<size_t>& rcounts);
  // One value from each member, in member order (ledger op "gather", so it never mixes with the
  // all_gather bytes that lessons compare with the formulas). The caller adds them in member order.
  template <class T>
  std::vector<T> all_gather_value(T v);
  // The same for k values from each member (every member gives as many): member r's at [r·k, (r+1)·k).
  template <class T>
  std::vector<T> all_gather_values(const std::vector<T>& mine);
  void barrier();  // no ledger record (no payload)

  // ---- Non-blocking ring collectives. start_* posts the first ring step and returns; progress() advances
  // every step whose messages have arrived — of EVERY operation in flight on this rank, so ranks that wait
  // for their operations in different orders cannot deadlock — and returns true when p is complete;
  // wait() drives p to completion. The buffer must stay alive and untouched until then. One ledger record
  // per operation (at start) and one trace event (lane 1) from start to completion.
  class Pending {
   public:
    Pending();
    Pending(Pending&& o) noexcept;
    Pending& operator=(Pending&& o) noexcept;  // waits for the operation it replaces
    ~Pending();                                // waits if still in flight: never leaves MPI writing into freed memory
    bool done() const;                         // complete (or empty)
   private:
    friend class Communicator;
    explicit Pending(std::unique_ptr<detail::InFlight> op);
    std::unique_ptr<detail::InFlight> op_;
  };
  template <class T>
  Pending start_reduce_scatter(T* buf, const std::vector<size_t>& counts);
  template <class T>
  Pending start_all_gather(T* buf, const std::vector<size_t>& counts);
  template <class T>
  Pending start_all_reduce(T* buf, const std::vector<size_t>& counts);
  // Point to point, non-blocking (one ledger record each, impl "p2p"; trace lane 1): posted now, completed
  // by progress()/wait(); the buffer must stay untouched until then. Posting sends without waiting for
  // them is what keeps a pipeline schedule from deadlocking on large messages. The peer is another member.
  template <class T>
  Pending start_send(const T* buf, size_t n, int dst, int tag);
  template <class T>
  Pending start_recv(T* buf, size_t n, int src, int tag);
  bool progress(Pending& p);
  void wait(Pending& p);
  // Advances every operation in flight on this rank, of every communicator (what progress(p) does first).
  static void progress_all();

  // Even split of n into size() chunks, first n % size() one larger (the all_reduce(buf, n) chunks).
  std::vector<size_t> even_counts(size_t n) const;

 private:
  enum class Coll { reduce_scatter, all_gather, all_reduce };
  Communicator() = default;
  void free_comm();
  int next_tag();
  CommCall* record(const char* op, size_t elements, size_t elem_bytes, const char* impl);
  std::string trace_name(const char* op, size_t bytes) const;
  void check_counts(const std::vector<size_t>& counts, const char* op) const;
  int world_of(int member) const {
    return member >= 0 && member < static_cast<int>(world_.size()) ? world_[member] : -1;
  }
  // impl: the ring or MPI's built-in for this call (impl_ for the collectives; the control plane's gather is
  // always MPI's, p2p.cpp).
  std::unique_ptr<detail::InFlight> start(Coll c, void* buf, const std::vector<size_t>& counts,
                                          const detail::TypeOps& t, const char* op, bool blocking, CommImpl impl);
  void p2p(const char* op, const void* sbuf, size_t sn, int dst, void* rbuf, size_t rn, int src, int tag,
           const detail::TypeOps& t);
  std::unique_ptr<detail::InFlight> start_p2p(const char* op, void* buf, size_t n, int peer, int tag,
                                              const detail::TypeOps& t);
  void bcast(void* buf, size_t n, int root, const detail::TypeOps& t);
  void alltoallv(const void* sbuf, const std::vector<size_t>& sc, void* rbuf, const std::vector<size_t>& rc,
                 const detail::TypeOps& t);

  std::unique_ptr<CommHandle> h_;
  Axis axis_ = Axis::world;
  std::vector<int> nodes_{0};
  CommLedger* ledger_ = nullptr;
  Trace* trace_ = nullptr;
  MemoryLedger* mem_ = nullptr;
  CommImpl impl_ = CommImpl::ring;
  const char* purpose_ = "";
  bool owned_ = false;
  int rank_ = 0, size_ = 1;
  std::vector<int> world_;  // member → world rank (for the watchdog's messages)
  uint32_t coll_seq_ = 0;   // collectives started so far: the same on every member, so it names their tags
};

// End every rank of the job with this exit code: MPI_Abort on the world, or exit when not under MPI.
[[noreturn]] void abort_all(int code);

// Seconds a wait may take before the watchdog ends the job naming the rank that never arrived
// (comm/watchdog.cpp); 0 = never. Default: $SHARDLAB_COMM_TIMEOUT, else 120.
void set_comm_timeout(double seconds);

}  // namespace shardlab
