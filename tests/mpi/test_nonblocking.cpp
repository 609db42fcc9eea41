// Non-blocking collectives: several in flight on one communicator, advanced by progress() between
// pieces of other work (as bucketed DP overlaps backward, C9), waited for in different orders on
// different ranks (the progress engine must not deadlock), mixed with blocking calls, moved and dropped.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>

#include "comm/trace.h"
#include "core/ledger.h"
#include "helpers.h"

using namespace shardlab;
using namespace shardlab::test;

namespace {
double busy_work(int k) {  // stands in for backward compute between progress calls
  double s = 0;
  for (int i = 0; i < 2000; ++i) s += std::sqrt(static_cast<double>(i + k));
  return s;
}
template <class T>
size_t wrong_sums(const std::vector<T>& buf, size_t from, size_t to, int N) {
  size_t bad = 0;
  for (size_t i = from; i < to; ++i) bad += buf[i] != expected_sum<T>(N, i);
  return bad;
}
}  // namespace

TEST_CASE("two buckets in flight at once, progressed between work", "[nonblocking]") {
  const int N = world_size();
  CommLedger ledger;
  Communicator c = world(&ledger);
  const int r = c.rank();
  const size_t na = 50000, nb = 4099;
  std::vector<float> a(na), b(nb);
  for (size_t i = 0; i < na; ++i) a[i] = input<float>(r, i);
  for (size_t i = 0; i < nb; ++i) b[i] = input<float>(r, i);
  const auto kb = uneven(nb, N);

  auto pa = c.start_all_reduce(a.data(), even(na, N));
  busy_work(1);
  auto pb = c.start_reduce_scatter(b.data(), kb);
  double sink = 0;
  int polls = 0;
  bool da = false, db = false;
  while (!(da && db)) {
    da = c.progress(pa);
    sink += busy_work(polls++);
    db = c.progress(pb);
  }
  CHECK(sink > 0);
  CHECK(wrong_sums(a, 0, na, N) == 0);
  auto off = offsets(kb);
  CHECK(wrong_sums(b, off[r], off[r + 1], N) == 0);
  CHECK(ledger.calls().size() == 2);  // one record per operation
}

TEST_CASE("ranks waiting for their buckets in different orders do not deadlock", "[nonblocking]") {
  const int N = world_size();
  Communicator c = world(nullptr);
  const int r = c.rank();
  const size_t n = 30000;
  std::vector<std::vector<double>> bufs(4, std::vector<double>(n));
  std::vector<Communicator::Pending> pend;
  for (auto& b : bufs) {
    for (size_t i = 0; i < n; ++i) b[i] = input<double>(r, i);
    pend.push_back(c.start_all_reduce(b.data(), even(n, N)));  // Pending is movable
  }
  // Even ranks wait first-to-last, odd ranks last-to-first.
  for (int k = 0; k < 4; ++k) c.wait(pend[r % 2 ? 3 - k : k]);
  for (auto& b : bufs) CHECK(wrong_sums(b, 0, n, N) == 0);
}

TEST_CASE("blocking collectives and point-to-point while a bucket is in flight", "[nonblocking]") {
  const int N = world_size();
  Communicator c = world(nullptr);
  const int r = c.rank();
  const size_t n = 20000;
  std::vector<float> a(n), b(n);
  for (size_t i = 0; i < n; ++i) a[i] = b[i] = input<float>(r, i);
  auto p = c.start_all_reduce(a.data(), even(n, N));
  c.all_reduce(b.data(), n);  // a different tag: the two never mix
  std::vector<int32_t> v = c.all_gather_value<int32_t>(r * 3);
  if (N > 1) {
    int32_t got = -1, mine = r;
    c.sendrecv(&mine, 1, (r + 1) % N, &got, 1, (r + N - 1) % N);
    CHECK(got == (r + N - 1) % N);
  }
  c.wait(p);
  CHECK(wrong_sums(a, 0, n, N) == 0);
  CHECK(wrong_sums(b, 0, n, N) == 0);
  CHECK(v.back() == (N - 1) * 3);
}

TEST_CASE("a Pending dropped before completion finishes its operation", "[nonblocking]") {
  const int N = world_size();
  Communicator c = world(nullptr);
  const size_t n = 10000;
  std::vector<int64_t> a(n);
  for (size_t i = 0; i < n; ++i) a[i] = input<int64_t>(c.rank(), i);
  { auto p = c.start_all_reduce(a.data(), even(n, N)); }  // the destructor waits
  CHECK(wrong_sums(a, 0, n, N) == 0);
  Communicator::Pending empty;
  CHECK(empty.done());
  CHECK(c.progress(empty));
}

TEST_CASE("trace events: blocking on lane 0, non-blocking on lane 1 from start to completion", "[nonblocking][trace]") {
  const int N = world_size();
  Trace trace(true);
  Communicator c = Communicator::world(nullptr, &trace, two_per_node(N));
  std::vector<float> a(1000, 1.f);
  c.all_reduce(a.data(), a.size());
  auto p = c.start_all_gather(a.data(), even(1000, N));
  c.wait(p);
  c.broadcast(a.data(), 1000, 0);
  const auto& ev = trace.events();
  REQUIRE(ev.size() == 3);
  CHECK(ev[0].name == "all_reduce world 4.0 kB");
  CHECK(ev[0].lane == 0);
  CHECK(ev[1].name == "all_gather world 4.0 kB");
  CHECK(ev[1].lane == 1);
  CHECK(ev[2].name == "broadcast world 4.0 kB");
  for (const auto& e : ev) {
    CHECK(std::string(e.cat) == "comm");
    CHECK(e.end_us >= e.begin_us);
  }
}

TEST_CASE("the ring's receive buffer is booked as comm_buffer while an operation runs", "[nonblocking][memory]") {
  const int N = world_size();
  MemoryLedger mem;
  Communicator c = world(nullptr);
  c.set_memory_ledger(&mem);
  const size_t n = 1000000;  // 4 MB of floats: the buffer is 4 segments (of 256 KiB), not a whole chunk
  std::vector<float> a(n, 1.f);
  auto p = c.start_reduce_scatter(a.data(), even(n, N));
  const size_t booked = mem.current(Mem::comm_buffer);
  c.wait(p);
  const char* e = std::getenv("SHARDLAB_RING_SEGMENT");  // scripts/mpi_tests.sh also runs with 64-byte segments
  const size_t segment = e ? std::strtoul(e, nullptr, 10) : 256 * 1024;
  CHECK(booked == (N > 1 ? std::min<size_t>(4 * segment, (n + N - 1) / N * sizeof(float)) : 0));
  CHECK(mem.current(Mem::comm_buffer) == 0);
  c.all_gather(a.data(), even(n, N));  // no reduction, no receive buffer
  CHECK(mem.peak(Mem::comm_buffer) == booked);
}
