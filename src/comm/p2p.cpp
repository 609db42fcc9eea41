// Point-to-point messages (pipeline stages, context-parallel rings), blocking and non-blocking, broadcast, all-to-all
// (expert parallel dispatch), all_gather_value and barrier. Every wait goes through the progress engine, so
// non-blocking collectives in flight keep moving, and the watchdog catches a stuck peer.
//
// Broadcast is a ring pipeline: root → root+1 → … → root-1, cut into 256 KiB segments; a member forwards
// segment k as soon as it has it, while segment k+1 is still arriving. Every member but the root receives
// n elements and every member but the last (root-1) sends n — the same per-rank volume as an all-gather,
// in N-1 + segments steps (a binomial tree would need log2(N) full-size steps).
// All-to-all is N-1 pairwise rounds: in round k member r sends to r+k and receives from r-k.
// Leaves out: MPI_ANY_SOURCE, probing messages of unknown size.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <numeric>

#include "comm/blocking_call.h"
#include "comm/communicator.h"
#include "comm/mpi_handle.h"
#include "comm/trace.h"

namespace shardlab {

using detail::mpi_count;
using detail::type_ops;
using detail::TypeOps;

namespace {
constexpr size_t kBroadcastSegmentBytes = 256 * 1024;

// One trace event (lane 0) around a blocking call, if tracing.
class CommEvent {
 public:
  CommEvent(Trace* t, std::string name) : t_(t && t->enabled() ? t : nullptr) {
    if (t_) {
      name_ = std::move(name);
      t0_ = t_->now_us();
    }
  }
  ~CommEvent() {
    if (t_) t_->add(name_, "comm", t0_, t_->now_us(), 0);
  }

 private:
  Trace* t_;
  std::string name_;
  double t0_ = 0;
};

void wait_one(MPI_Request& r, int peer, const std::string& what) {
  if (r == MPI_REQUEST_NULL) return;
  detail::spin_until(
      [&] {
        int flag = 0;
        MPI_Test(&r, &flag, MPI_STATUS_IGNORE);
        return flag != 0;
      },
      [&] { return peer; }, what);
}
}  // namespace

// ---- point to point ----

void Communicator::p2p(const char* op, const void* sbuf, size_t sn, int dst, void* rbuf, size_t rn, int src, int tag,
                       const TypeOps& t) {
  if (tag < 0 || tag > kMaxUserTag || (sbuf && (dst < 0 || dst >= size_)) || (rbuf && (src < 0 || src >= size_))) {
    std::fprintf(stderr, "shardlab: error: %s on %s: bad peer (dst %d, src %d) or tag %d (tags 0..%d)\n", op,
                 axis_name(axis_), dst, src, tag, kMaxUserTag);
    abort_all(2);
  }
  CommCall* rec = record(op, (sbuf ? sn : 0) + (rbuf ? rn : 0), t.bytes, "p2p");
  CommEvent ev(trace_, trace_ ? trace_name(op, ((sbuf ? sn : 0) + (rbuf ? rn : 0)) * t.bytes) : "");
  if (h_->comm == MPI_COMM_NULL) {  // a world of one: only an exchange with oneself can be served
    if (sbuf && rbuf && dst == 0 && src == 0 && sn == rn) {
      std::memmove(rbuf, sbuf, sn * t.bytes);
      return;
    }
    std::fprintf(stderr, "shardlab: error: %s on %s with a single rank and no MPI\n", op, axis_name(axis_));
    abort_all(2);
  }
  std::vector<MPI_Request> reqs;
  std::vector<int> peers;
  if (rbuf) {
    reqs.push_back(MPI_REQUEST_NULL);
    peers.push_back(world_of(src));
    MPI_Irecv(rbuf, mpi_count(rn, op), t.type, src, tag, h_->comm, &reqs.back());
    detail::ledger_recv(rec, rn * t.bytes, inter_node(src));
  }
  if (sbuf) {
    reqs.push_back(MPI_REQUEST_NULL);
    peers.push_back(world_of(dst));
    MPI_Isend(sbuf, mpi_count(sn, op), t.type, dst, tag, h_->comm, &reqs.back());
    detail::ledger_send(rec, sn * t.bytes, inter_node(dst));
  }
  detail::wait_requests(reqs, peers,
                        std::string(op) + " on " + axis_name(axis_) + " (tag " + std::to_string(tag) + ")");
}

template <class T>
void Communicator::send(const T* buf, size_t n, int dst, int tag) {
  p2p("send", buf, n, dst, nullptr, 0, -1, tag, type_ops<T>());
}
template <class T>
void Communicator::recv(T* buf, size_t n, int src, int tag) {
  p2p("recv", nullptr, 0, -1, buf, n, src, tag, type_ops<T>());
}
template <class T>
void Communicator::sendrecv(const T* sbuf, size_t sn, int dst, T* rbuf, size_t rn, int src, int tag) {
  p2p("sendrecv", sbuf, sn, dst, rbuf, rn, src, tag, type_ops<T>());
}

// ---- point to point, non-blocking ----

namespace {
// One MPI_Isend or MPI_Irecv, advanced by MPI_Test (its buffer must stay alive until done).
class P2POp final : public detail::InFlight {
 public:
  P2POp(MPI_Request r, int peer) : req_(r), peer_(peer) {}
  bool advance() override {
    if (done_) return true;
    int flag = 0;
    MPI_Test(&req_, &flag, MPI_STATUS_IGNORE);
    if (flag) finish();
    return done_;
  }
  int waiting_for() const override { return done_ ? -1 : peer_; }

 private:
  MPI_Request req_;
  int peer_;
};
}  // namespace

std::unique_ptr<detail::InFlight> Communicator::start_p2p(const char* op, void* buf, size_t n, int peer, int tag,
                                                          const TypeOps& t) {
  const bool sending = op[0] == 's';
  if (tag < 0 || tag > kMaxUserTag || peer < 0 || peer >= size_ || peer == rank_ || h_->comm == MPI_COMM_NULL) {
    std::fprintf(stderr, "shardlab: error: %s on %s: bad peer %d or tag %d (tags 0..%d), or no MPI\n", op,
                 axis_name(axis_), peer, tag, kMaxUserTag);
    abort_all(2);
  }
  CommCall* rec = record(op, n, t.bytes, "p2p");
  MPI_Request r = MPI_REQUEST_NULL;
  if (sending) {
    MPI_Isend(buf, mpi_count(n, op), t.type, peer, tag, h_->comm, &r);
    detail::ledger_send(rec, n * t.bytes, inter_node(peer));
  } else {
    MPI_Irecv(buf, mpi_count(n, op), t.type, peer, tag, h_->comm, &r);
    detail::ledger_recv(rec, n * t.bytes, inter_node(peer));
  }
  auto f = std::make_unique<P2POp>(r, peer);
  f->what = std::string(op) + " on " + axis_name(axis_) + " (tag " + std::to_string(tag) + ")";
  f->world_ranks = world_;
  f->lane = 1;
  if (trace_ && trace_->enabled()) {
    f->trace = trace_;
    f->trace_name = trace_name(op, n * t.bytes);
    f->t0_us = trace_->now_us();
  }
  if (!f->advance()) detail::engine_add(f.get());
  return f;
}

template <class T>
Communicator::Pending Communicator::start_send(const T* buf, size_t n, int dst, int tag) {
  return Pending(start_p2p("send", const_cast<T*>(buf), n, dst, tag, type_ops<T>()));
}
template <class T>
Communicator::Pending Communicator::start_recv(T* buf, size_t n, int src, int tag) {
  return Pending(start_p2p("recv", buf, n, src, tag, type_ops<T>()));
}

// ---- broadcast ----

void Communicator::bcast(void* buf, size_t n, int root, const TypeOps& t) {
  if (root < 0 || root >= size_) {
    std::fprintf(stderr, "shardlab: error: broadcast on %s from member %d of %d\n", axis_name(axis_), root, size_);
    abort_all(2);
  }
  CommCall* rec = record("broadcast", n, t.bytes, comm_impl_name(impl_));
  int tag = next_tag();  // taken whatever the implementation, so the sequence stays equal on every member
  CommEvent ev(trace_, trace_ ? trace_name("broadcast", n * t.bytes) : "");
  if (size_ == 1 || n == 0) return;
  if (impl_ == CommImpl::mpi) {
    detail::BlockingCall guard("MPI's broadcast (--comm mpi)");
    MPI_Bcast(buf, mpi_count(n, "broadcast"), t.type, root, h_->comm);
    return;
  }
  const int pos = (rank_ - root + size_) % size_;  // my place on the chain; the root is 0
  const int prev = (rank_ + size_ - 1) % size_, next = (rank_ + 1) % size_;
  const bool receives = pos != 0, forwards = pos != size_ - 1;
  const size_t seg = std::max<size_t>(1, kBroadcastSegmentBytes / t.bytes);
  const size_t nseg = (n + seg - 1) / seg;
  char* p = static_cast<char*>(buf);
  std::vector<MPI_Request> rreq(receives ? nseg : 0, MPI_REQUEST_NULL), sreq(forwards ? nseg : 0, MPI_REQUEST_NULL);
  const std::string what = std::string("broadcast on ") + axis_name(axis_) + " (collective #" +
                           std::to_string(coll_seq_ - 1) + " of its group)";
  for (size_t k = 0; k < rreq.size(); ++k) {  // every segment's receive posted up front: MPI can land them early
    size_t len = std::min(seg, n - k * seg);
    MPI_Irecv(p + k * seg * t.bytes, static_cast<int>(len), t.type, prev, tag, h_->comm, &rreq[k]);
  }
  for (size_t k = 0; k < nseg; ++k) {
    if (receives) wait_one(rreq[k], world_of(prev), what);
    if (forwards) {
      size_t len = std::min(seg, n - k * seg);
      MPI_Isend(p + k * seg * t.bytes, static_cast<int>(len), t.type, next, tag, h_->comm, &sreq[k]);
    }
  }
  detail::wait_requests(sreq, std::vector<int>(sreq.size(), world_of(next)), what);
  if (receives) detail::ledger_recv(rec, n * t.bytes, inter_node(prev));
  if (forwards) detail::ledger_send(rec, n * t.bytes, inter_node(next));
}

template <class T>
void Communicator::broadcast(T* buf, size_t n, int root) {
  bcast(buf, n, root, type_ops<T>());
}

// ---- all-to-all ----

void Communicator::alltoallv(const void* sbuf, const std::vector<size_t>& sc, void* rbuf, const std::vector<size_t>& rc,
                             const TypeOps& t) {
  check_counts(sc, "all_to_all");
  check_counts(rc, "all_to_all");
  if (sc[rank_] != rc[rank_]) {
    std::fprintf(stderr, "shardlab: error: all_to_all on %s: member %d keeps %zu elements but expects %zu\n",
                 axis_name(axis_), rank_, sc[rank_], rc[rank_]);
    abort_all(2);
  }
  std::vector<size_t> so(size_, 0), ro(size_, 0);  // chunk offsets
  for (int m = 1; m < size_; ++m) {
    so[m] = so[m - 1] + sc[m - 1];
    ro[m] = ro[m - 1] + rc[m - 1];
  }
  size_t sent = so.back() + sc.back(), got = ro.back() + rc.back();
  CommCall* rec = record("all_to_all", sent + got, t.bytes, comm_impl_name(impl_));
  int tag = next_tag();
  CommEvent ev(trace_, trace_ ? trace_name("all_to_all", sent * t.bytes) : "");
  const char* s = static_cast<const char*>(sbuf);
  char* r = static_cast<char*>(rbuf);
  if (impl_ == CommImpl::mpi && size_ > 1) {
    std::vector<int> isc(size_), iso(size_), irc(size_), iro(size_);
    for (int m = 0; m < size_; ++m) {
      isc[m] = mpi_count(sc[m], "all_to_all");
      iso[m] = mpi_count(so[m], "all_to_all");
      irc[m] = mpi_count(rc[m], "all_to_all");
      iro[m] = mpi_count(ro[m], "all_to_all");
    }
    for (int m = 0; m < size_; ++m)  // what must cross between members, however MPI moves it
      if (m != rank_) {
        if (rc[m]) detail::ledger_recv(rec, rc[m] * t.bytes, inter_node(m));
        if (sc[m]) detail::ledger_send(rec, sc[m] * t.bytes, inter_node(m));
      }
    detail::BlockingCall guard("MPI's all-to-all (--comm mpi)");
    MPI_Alltoallv(sbuf, isc.data(), iso.data(), t.type, rbuf, irc.data(), iro.data(), t.type, h_->comm);
    return;
  }
  if (sc[rank_]) std::memcpy(r + ro[rank_] * t.bytes, s + so[rank_] * t.bytes, sc[rank_] * t.bytes);
  const std::string what = std::string("all_to_all on ") + axis_name(axis_) + " (collective #" +
                           std::to_string(coll_seq_ - 1) + " of its group)";
  for (int k = 1; k < size_; ++k) {
    const int dst = (rank_ + k) % size_, src = (rank_ - k + size_) % size_;
    std::vector<MPI_Request> reqs(2, MPI_REQUEST_NULL);
    if (rc[src]) {
      MPI_Irecv(r + ro[src] * t.bytes, mpi_count(rc[src], "all_to_all"), t.type, src, tag, h_->comm, &reqs[0]);
      detail::ledger_recv(rec, rc[src] * t.bytes, inter_node(src));
    }
    if (sc[dst]) {
      MPI_Isend(s + so[dst] * t.bytes, mpi_count(sc[dst], "all_to_all"), t.type, dst, tag, h_->comm, &reqs[1]);
      detail::ledger_send(rec, sc[dst] * t.bytes, inter_node(dst));
    }
    detail::wait_requests(reqs, {world_of(src), world_of(dst)}, what);
  }
}

template <class T>
void Communicator::all_to_all_v(const T* sbuf, const std::vector<size_t>& scounts, T* rbuf,
                                const std::vector<size_t>& rcounts) {
  alltoallv(sbuf, scounts, rbuf, rcounts, type_ops<T>());
}

// ---- small things ----
// The control plane — sizes, node indices, each step's loss and norms, the configuration check — goes through
// MPI's built-in all-gather (non-blocking, waited for like the rest) whatever --comm says (the values are copied, never
// added: the same bits either way). A ring under construction (a lab's student's ring_steps.cpp) then gets wrong sums,
// not a corrupted process grid.

template <class T>
std::vector<T> Communicator::all_gather_value(T v) {
  return all_gather_values(std::vector<T>{v});
}

template <class T>
std::vector<T> Communicator::all_gather_values(const std::vector<T>& mine) {
  const size_t k = mine.size();
  std::vector<T> out(size_ * k, T{});
  std::copy(mine.begin(), mine.end(), out.begin() + rank_ * k);
  // Posted as MPI_Iallgather whatever this communicator's rings are, and waited for like any operation: the
  // watchdog sees it.
  Pending p(start(Coll::all_gather, out.data(), std::vector<size_t>(size_, k), type_ops<T>(), "gather", false,
                  CommImpl::mpi));
  wait(p);
  return out;
}

void Communicator::barrier() {
  if (size_ == 1) return;
  std::vector<MPI_Request> r(1, MPI_REQUEST_NULL);
  MPI_Ibarrier(h_->comm, &r[0]);
  detail::wait_requests(r, {-1}, std::string("barrier on ") + axis_name(axis_));
}

#define SHARDLAB_INSTANTIATE(T)                                                                                      \
  template void Communicator::send<T>(const T*, size_t, int, int);                                                   \
  template void Communicator::recv<T>(T*, size_t, int, int);                                                         \
  template void Communicator::sendrecv<T>(const T*, size_t, int, T*, size_t, int, int);                              \
  template Communicator::Pending Communicator::start_send<T>(const T*, size_t, int, int);                            \
  template Communicator::Pending Communicator::start_recv<T>(T*, size_t, int, int);                                  \
  template void Communicator::broadcast<T>(T*, size_t, int);                                                         \
  template void Communicator::all_to_all_v<T>(const T*, const std::vector<size_t>&, T*, const std::vector<size_t>&); \
  template std::vector<T> Communicator::all_gather_value<T>(T);                                                      \
  template std::vector<T> Communicator::all_gather_values<T>(const std::vector<T>&);
SHARDLAB_COMM_TYPES(SHARDLAB_INSTANTIATE)
#undef SHARDLAB_INSTANTIATE

}  // namespace shardlab
