// The comm ledger against the ring's byte formulas, per rank and exactly, split into intra- and
// inter-node links (members sit two per node). Reduce-scatter: member r sends n - counts[r] and receives
// n - counts[r-1]; all-gather: sends n - counts[r+1], receives n - counts[r]; all-reduce: both (C8).
#include <catch2/catch.hpp>

#include "helpers.h"

using namespace shardlab;
using namespace shardlab::test;

namespace {

// Checks a record's bytes: `sent` went to member `to`, `recvd` came from member `from`.
void check_bytes(const Communicator& c, const CommCall& rec, uint64_t sent, int to, uint64_t recvd, int from) {
  bool to_inter = c.inter_node(to), from_inter = c.inter_node(from);
  CHECK(rec.sent_inter == (to_inter ? sent : 0));
  CHECK(rec.sent_intra == (to_inter ? 0 : sent));
  CHECK(rec.recv_inter == (from_inter ? recvd : 0));
  CHECK(rec.recv_intra == (from_inter ? 0 : recvd));
}

template <class T>
void check_ring_bytes(bool nonblocking) {
  const int N = world_size();
  CommLedger ledger;
  Communicator c = world(&ledger);
  const int r = c.rank(), prev = (r + N - 1) % N, next = (r + 1) % N;
  const uint64_t es = sizeof(T);
  for (size_t n : {size_t{1}, size_t{1000}, size_t{4099}}) {
    for (const auto& k : {even(n, N), uneven(n, N), one_chunk(n, N)}) {
      INFO("n " << n << " rank " << r << " of " << N << " counts[r] " << k[r]);
      std::vector<T> buf(n, T{});
      const char* ops[3] = {"reduce_scatter", "all_gather", "all_reduce"};
      const uint64_t sent[3] = {(n - k[r]) * es, (n - k[next]) * es, (2 * n - k[r] - k[next]) * es};
      const uint64_t recvd[3] = {(n - k[prev]) * es, (n - k[r]) * es, (2 * n - k[prev] - k[r]) * es};
      for (int op = 0; op < 3; ++op) {
        size_t before = ledger.calls().size();
        if (nonblocking) {
          auto p = op == 0   ? c.start_reduce_scatter(buf.data(), k)
                   : op == 1 ? c.start_all_gather(buf.data(), k)
                             : c.start_all_reduce(buf.data(), k);
          c.wait(p);
        } else if (op == 0) {
          c.reduce_scatter(buf.data(), k);
        } else if (op == 1) {
          c.all_gather(buf.data(), k);
        } else {
          c.all_reduce(buf.data(), k);
        }
        REQUIRE(ledger.calls().size() == before + 1);  // one record per call, blocking or not
        const CommCall& rec = ledger.calls().back();
        CHECK(rec.op == ops[op]);
        CHECK(rec.axis == Axis::world);
        CHECK(rec.impl == "ring");
        CHECK(rec.elements == n);
        CHECK(rec.elem_bytes == es);
        check_bytes(c, rec, sent[op], next, recvd[op], prev);
      }
    }
  }
}

}  // namespace

TEMPLATE_TEST_CASE("ledger bytes equal the ring formulas", "[ledger]", float, double, bf16) {
  check_ring_bytes<TestType>(false);
  check_ring_bytes<TestType>(true);
}

TEST_CASE("all-reduce moves 2(N-1)/N of the buffer per rank, whatever N (C8)", "[ledger]") {
  const int N = world_size();
  CommLedger ledger;
  Communicator c = world(&ledger);
  const size_t n = 840 * 16;  // divisible by 1 … 8: equal chunks
  std::vector<float> g(n, 1.f);
  c.all_reduce(g.data(), n);
  const CommCall& rec = ledger.calls().back();
  CHECK(rec.sent() == 2 * (N - 1) * n / N * sizeof(float));
  CHECK(rec.recv() == 2 * (N - 1) * n / N * sizeof(float));
  CHECK(g[0] == static_cast<float>(N));
  if (N == 1) CHECK(ledger.calls().size() == 1);  // a world of one: no bytes, still a record
}

TEST_CASE("ledger bytes of broadcast, all-to-all, point-to-point and gather", "[ledger]") {
  const int N = world_size();
  CommLedger ledger;
  Communicator c = world(&ledger);
  const int r = c.rank(), prev = (r + N - 1) % N, next = (r + 1) % N;
  const size_t n = 100000;  // several broadcast segments
  std::vector<float> buf(n, 1.f);
  for (int root = 0; root < N; ++root) {
    c.broadcast(buf.data(), n, root);
    const CommCall& rec = ledger.calls().back();
    const int pos = (r - root + N) % N;  // chain root → root+1 → … → root-1
    CHECK(rec.op == "broadcast");
    check_bytes(c, rec, pos != N - 1 ? n * 4 : 0, next, pos != 0 ? n * 4 : 0, prev);
  }

  // all-to-all: member s sends (s + d) % 3 elements to member d (zeros included).
  std::vector<size_t> sc(N), rc(N);
  for (int m = 0; m < N; ++m) {
    sc[m] = (r + m) % 3;
    rc[m] = (m + r) % 3;
  }
  std::vector<double> s(std::accumulate(sc.begin(), sc.end(), size_t{0})),
      d(std::accumulate(rc.begin(), rc.end(), size_t{0}));
  c.all_to_all_v(s.data(), sc, d.data(), rc);
  const CommCall& a2a = ledger.calls().back();
  CHECK(a2a.op == "all_to_all");
  uint64_t want[4] = {0, 0, 0, 0};  // sent intra, inter, recv intra, inter
  for (int m = 0; m < N; ++m) {
    if (m == r) continue;
    want[c.inter_node(m) ? 1 : 0] += sc[m] * 8;
    want[c.inter_node(m) ? 3 : 2] += rc[m] * 8;
  }
  CHECK(a2a.sent_intra == want[0]);
  CHECK(a2a.sent_inter == want[1]);
  CHECK(a2a.recv_intra == want[2]);
  CHECK(a2a.recv_inter == want[3]);

  if (N > 1) {  // sendrecv around the ring: 5 ints to r+1, 5 from r-1
    std::vector<int32_t> out(5, r), in(5, -1);
    c.sendrecv(out.data(), 5, next, in.data(), 5, prev, 7);
    const CommCall& rec = ledger.calls().back();
    CHECK(rec.op == "sendrecv");
    CHECK(rec.impl == "p2p");
    check_bytes(c, rec, 20, next, 20, prev);
    CHECK(in[4] == prev);
  }

  // The control plane's gather: MPI's built-in whatever --comm says (a ring under construction cannot corrupt
  // it), so booked as a call with its payload and no link bytes; never counted with the all_gather the
  // formulas are about.
  std::vector<int64_t> v = c.all_gather_value<int64_t>(r);
  const CommCall& g = ledger.calls().back();
  CHECK(g.op == "gather");
  CHECK(g.impl == "mpi");
  check_bytes(c, g, 0, next, 0, prev);
  CHECK(v.size() == static_cast<size_t>(N));
  for (int m = 0; m < N; ++m) CHECK(v[m] == m);
}

TEST_CASE("--comm mpi records the payload but no link bytes", "[ledger][mpi]") {
  const int N = world_size();
  CommLedger ledger;
  Communicator c = world(&ledger, CommImpl::mpi);
  std::vector<float> buf(1000, 1.f);
  c.all_reduce(buf.data(), buf.size());
  auto p = c.start_reduce_scatter(buf.data(), even(1000, N));
  c.wait(p);
  REQUIRE(ledger.calls().size() == 2);
  for (const CommCall& rec : ledger.calls()) {
    CHECK(rec.impl == "mpi");
    CHECK(rec.elements == 1000);
    CHECK(rec.elem_bytes == 4);
    CHECK(rec.sent() == 0);
    CHECK(rec.recv() == 0);
  }
}
