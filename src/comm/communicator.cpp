// Communicator: life cycle (world, split, wrap), the ring collectives' entry points (blocking and
// non-blocking, ring or MPI built-in) with their ledger records and trace events, and Pending.
// The ring itself is in ring.cpp, MPI's built-ins in mpi_builtin.cpp, point-to-point, broadcast and
// all-to-all in p2p.cpp, the progress engine and watchdog in engine.cpp.
#include "comm/communicator.h"

#include <cstdio>
#include <numeric>

#include "comm/blocking_call.h"
#include "comm/mpi_handle.h"
#include "comm/trace.h"

namespace shardlab {

using detail::InFlight;
using detail::type_ops;
using detail::TypeOps;

const char* comm_impl_name(CommImpl impl) { return word_of(kCommImplWords, impl); }

namespace {
bool mpi_running() {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  return init && !fin;
}

// MPI's communicator constructors (dup, split) are blocking collectives the watchdog cannot see into:
// first every member must arrive at a non-blocking barrier, waited for under the watchdog, so a member that
// never comes (stopped, stuck, in another call) is named instead of hanging everyone.
void all_arrive(MPI_Comm c, const std::string& what) {
  std::vector<MPI_Request> r(1, MPI_REQUEST_NULL);
  MPI_Ibarrier(c, &r[0]);
  detail::wait_requests(r, {-1}, what);
}

std::vector<int> checked_nodes(std::vector<int> nodes, int size) {
  if (nodes.empty()) nodes.assign(size, 0);
  if (static_cast<int>(nodes.size()) != size) {
    std::fprintf(stderr, "shardlab: error: node_of_member has %zu entries for a communicator of %d\n", nodes.size(),
                 size);
    abort_all(2);
  }
  return nodes;
}
}  // namespace

// ---- life cycle ----

Communicator::Communicator(const CommHandle& h, Axis axis, std::vector<int> node_of_member, CommLedger* ledger,
                           Trace* trace, CommImpl impl, bool owned)
    : h_(std::make_unique<CommHandle>(h)), axis_(axis), ledger_(ledger), trace_(trace), impl_(impl), owned_(owned) {
  world_ = {0};
  if (h.comm != MPI_COMM_NULL) {
    MPI_Comm_rank(h.comm, &rank_);
    MPI_Comm_size(h.comm, &size_);
    MPI_Group mine, world;  // member j of this communicator is world rank world_[j]
    MPI_Comm_group(h.comm, &mine);
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    std::vector<int> ids(size_);
    std::iota(ids.begin(), ids.end(), 0);
    world_.resize(size_);
    MPI_Group_translate_ranks(mine, size_, ids.data(), world, world_.data());
    MPI_Group_free(&mine);
    MPI_Group_free(&world);
  }
  nodes_ = checked_nodes(std::move(node_of_member), size_);
}

Communicator Communicator::world(CommLedger* ledger, Trace* trace, std::vector<int> node_of_rank, CommImpl impl) {
  // A private duplicate of MPI_COMM_WORLD: the tags of two world() communicators can never meet.
  CommHandle h;
  if (mpi_running()) {  // else: a world of one, and no MPI call ever
    all_arrive(MPI_COMM_WORLD, "setting up the world communicator");
    detail::BlockingCall guard("setting up the world communicator (MPI_Comm_dup)");
    MPI_Comm_dup(MPI_COMM_WORLD, &h.comm);
  }
  return Communicator(h, Axis::world, std::move(node_of_rank), ledger, trace, impl, /*owned=*/true);
}

Communicator Communicator::split(int color, int key, Axis axis) const {
  CommHandle h;
  std::vector<int> nodes{nodes_[rank_]};
  if (h_->comm != MPI_COMM_NULL) {
    all_arrive(h_->comm,
               std::string("setting up the ") + axis_name(axis) + " communicators (split of " + axis_name(axis_) + ")");
    {
      detail::BlockingCall guard("setting up a communicator (MPI_Comm_split)");
      MPI_Comm_split(h_->comm, color, key, &h.comm);
    }
    // Member j of the new communicator is member parent[j] of this one: it keeps that member's node.
    MPI_Group mine, theirs;
    MPI_Comm_group(h_->comm, &mine);
    MPI_Comm_group(h.comm, &theirs);
    int n = 0;
    MPI_Comm_size(h.comm, &n);
    std::vector<int> ids(n), parent(n);
    std::iota(ids.begin(), ids.end(), 0);
    MPI_Group_translate_ranks(theirs, n, ids.data(), mine, parent.data());
    MPI_Group_free(&mine);
    MPI_Group_free(&theirs);
    nodes.resize(n);
    for (int j = 0; j < n; ++j) nodes[j] = nodes_[parent[j]];
  }
  Communicator c(h, axis, std::move(nodes), ledger_, trace_, impl_, /*owned=*/true);
  c.mem_ = mem_;
  return c;
}

Communicator::~Communicator() { free_comm(); }

void Communicator::free_comm() {
  if (h_ && owned_ && h_->comm != MPI_COMM_NULL && h_->comm != MPI_COMM_WORLD && mpi_running())
    MPI_Comm_free(&h_->comm);
}

Communicator::Communicator(Communicator&& o) noexcept = default;

Communicator& Communicator::operator=(Communicator&& o) noexcept {
  if (this != &o) {
    free_comm();
    h_ = std::move(o.h_);
    axis_ = o.axis_;
    nodes_ = std::move(o.nodes_);
    world_ = std::move(o.world_);
    ledger_ = o.ledger_;
    trace_ = o.trace_;
    mem_ = o.mem_;
    impl_ = o.impl_;
    purpose_ = o.purpose_;
    owned_ = o.owned_;
    rank_ = o.rank_;
    size_ = o.size_;
    coll_seq_ = o.coll_seq_;
  }
  return *this;
}

std::vector<int> detect_node_of_rank() {
  if (!mpi_running()) return {0};
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm local;
  all_arrive(MPI_COMM_WORLD, "finding the nodes (world)");
  std::vector<int> leaders(size), node(size);
  {
    detail::BlockingCall guard("finding the nodes (MPI_Comm_split_type)");
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
    int leader = rank;  // the lowest world rank on my node names it
    MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, local);
    MPI_Comm_free(&local);
    MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, MPI_COMM_WORLD);
  }
  std::vector<int> seen;  // leaders in order of first appearance = nodes in order of their lowest rank
  for (int r = 0; r < size; ++r) {
    int k = 0;
    while (k < static_cast<int>(seen.size()) && seen[k] != leaders[r]) ++k;
    if (k == static_cast<int>(seen.size())) seen.push_back(leaders[r]);
    node[r] = k;
  }
  return node;
}

// ---- helpers ----

// Collective messages use tags kMaxUserTag+1 … 32767 (the least MPI_TAG_UB any MPI allows), one per call
// in call order: the same on every member, and distinct for operations in flight at the same time.
int Communicator::next_tag() { return kMaxUserTag + 1 + static_cast<int>(coll_seq_++ % (32767 - kMaxUserTag)); }

CommCall* Communicator::record(const char* op, size_t elements, size_t elem_bytes, const char* impl) {
  return ledger_ ? &ledger_->begin(op, axis_, impl, elements, elem_bytes, purpose_) : nullptr;
}

std::string Communicator::trace_name(const char* op, size_t bytes) const {
  char size[32];
  if (bytes >= 1000000)
    std::snprintf(size, sizeof size, "%.1f MB", bytes / 1e6);
  else if (bytes >= 1000)
    std::snprintf(size, sizeof size, "%.1f kB", bytes / 1e3);
  else
    std::snprintf(size, sizeof size, "%zu B", bytes);
  return std::string(op) + " " + axis_name(axis_) + " " + size;
}

void Communicator::check_counts(const std::vector<size_t>& counts, const char* op) const {
  if (static_cast<int>(counts.size()) != size_) {
    std::fprintf(stderr, "shardlab: error: %s on %s got %zu counts for %d members\n", op, axis_name(axis_),
                 counts.size(), size_);
    abort_all(2);
  }
}

std::vector<size_t> Communicator::even_counts(size_t n) const {
  std::vector<size_t> c(size_, n / size_);
  for (size_t r = 0; r < n % size_; ++r) ++c[r];
  return c;
}

// ---- the three chunked collectives ----

std::unique_ptr<InFlight> Communicator::start(Coll c, void* buf, const std::vector<size_t>& counts, const TypeOps& t,
                                              const char* op, bool blocking, CommImpl impl) {
  check_counts(counts, op);
  size_t n = std::accumulate(counts.begin(), counts.end(), size_t{0});
  CommCall* rec = record(op, n, t.bytes, comm_impl_name(impl));
  int tag = next_tag();
  bool tracing = trace_ && trace_->enabled();
  double t0 = tracing ? trace_->now_us() : 0;
  std::unique_ptr<InFlight> f;
  if (impl == CommImpl::mpi && size_ > 1) {
    auto b = c == Coll::reduce_scatter ? detail::Builtin::reduce_scatter
             : c == Coll::all_gather   ? detail::Builtin::all_gather
                                       : detail::Builtin::all_reduce;
    f = detail::make_mpi_op(b, h_->comm, rank_, t, buf, counts, blocking);
  } else {  // the ring (with one member: no steps at all, no MPI call)
    detail::RingSpec spec{h_->comm,
                          rank_,
                          size_,
                          tag,
                          &t,
                          c != Coll::all_gather,
                          c != Coll::reduce_scatter,
                          rec,
                          inter_node((rank_ + size_ - 1) % size_),
                          inter_node((rank_ + 1) % size_),
                          mem_};
    f = detail::make_ring_op(spec, buf, counts);
  }
  f->what =
      std::string(op) + " on " + axis_name(axis_) + " (collective #" + std::to_string(coll_seq_) + " of its group)";
  f->world_ranks = world_;
  f->lane = blocking ? 0 : 1;
  if (tracing) {
    f->trace = trace_;
    f->trace_name = trace_name(op, n * t.bytes);
    f->t0_us = t0;
  }
  if (blocking) {
    detail::wait_op(*f);
  } else if (!f->advance()) {  // posts the first step; a finished operation never enters the engine
    detail::engine_add(f.get());
  }
  return f;
}

template <class T>
void Communicator::reduce_scatter(T* buf, const std::vector<size_t>& counts) {
  start(Coll::reduce_scatter, buf, counts, type_ops<T>(), "reduce_scatter", true, impl_);
}
template <class T>
void Communicator::all_gather(T* buf, const std::vector<size_t>& counts) {
  start(Coll::all_gather, buf, counts, type_ops<T>(), "all_gather", true, impl_);
}
template <class T>
void Communicator::all_reduce(T* buf, const std::vector<size_t>& counts) {
  start(Coll::all_reduce, buf, counts, type_ops<T>(), "all_reduce", true, impl_);
}
template <class T>
void Communicator::all_reduce(T* buf, size_t n) {
  all_reduce(buf, even_counts(n));
}
template <class T>
void Communicator::all_reduce_max(T* buf, size_t n) {
  start(Coll::all_reduce, buf, even_counts(n), detail::max_ops<T>(), "all_reduce", true, impl_);
}
template void Communicator::all_reduce_max<float>(float*, size_t);
template void Communicator::all_reduce_max<double>(double*, size_t);
template <class T>
Communicator::Pending Communicator::start_reduce_scatter(T* buf, const std::vector<size_t>& counts) {
  return Pending(start(Coll::reduce_scatter, buf, counts, type_ops<T>(), "reduce_scatter", false, impl_));
}
template <class T>
Communicator::Pending Communicator::start_all_gather(T* buf, const std::vector<size_t>& counts) {
  return Pending(start(Coll::all_gather, buf, counts, type_ops<T>(), "all_gather", false, impl_));
}
template <class T>
Communicator::Pending Communicator::start_all_reduce(T* buf, const std::vector<size_t>& counts) {
  return Pending(start(Coll::all_reduce, buf, counts, type_ops<T>(), "all_reduce", false, impl_));
}

// ---- Pending ----

Communicator::Pending::Pending() = default;
Communicator::Pending::Pending(std::unique_ptr<InFlight> op) : op_(std::move(op)) {}
Communicator::Pending::Pending(Pending&& o) noexcept = default;
Communicator::Pending& Communicator::Pending::operator=(Pending&& o) noexcept {
  if (this != &o) {
    if (op_ && !op_->done())
      detail::spin_until([&] { return op_->done(); }, [&] { return op_->waiting_for_world(); }, op_->what);
    op_ = std::move(o.op_);
  }
  return *this;
}
Communicator::Pending::~Pending() {
  if (op_ && !op_->done())
    detail::spin_until([&] { return op_->done(); }, [&] { return op_->waiting_for_world(); }, op_->what);
}
bool Communicator::Pending::done() const { return !op_ || op_->done(); }

void Communicator::progress_all() { detail::engine_drive(); }

bool Communicator::progress(Pending& p) {
  detail::engine_drive();  // every operation in flight, not only p
  return p.done();
}

void Communicator::wait(Pending& p) {
  if (p.done()) return;
  detail::spin_until([&] { return p.done(); }, [&] { return p.op_->waiting_for_world(); }, p.op_->what);
}

#define SHARDLAB_INSTANTIATE(T)                                                                         \
  template void Communicator::reduce_scatter<T>(T*, const std::vector<size_t>&);                        \
  template void Communicator::all_gather<T>(T*, const std::vector<size_t>&);                            \
  template void Communicator::all_reduce<T>(T*, const std::vector<size_t>&);                            \
  template void Communicator::all_reduce<T>(T*, size_t);                                                \
  template Communicator::Pending Communicator::start_reduce_scatter<T>(T*, const std::vector<size_t>&); \
  template Communicator::Pending Communicator::start_all_gather<T>(T*, const std::vector<size_t>&);     \
  template Communicator::Pending Communicator::start_all_reduce<T>(T*, const std::vector<size_t>&);
SHARDLAB_COMM_TYPES(SHARDLAB_INSTANTIATE)
#undef SHARDLAB_INSTANTIATE

}  // namespace shardlab
