// Arrays of ExactSum (core/exact_sum.h) through the collectives: every rank deposits its own pseudo-random terms
// (several per element, exponents spread over ±60 and ±600 binades, large terms that cancel between ranks, zeros,
// an infinity), then all-reduces or reduce-scatters; every rank must hold, bit for bit, the ExactSum a single
// process gets by adding every rank's terms itself (each rank regenerates them all). The ring adds chunk c in an
// order fixed by its owner and MPI's built-ins (--comm mpi) in orders of their own, different on 2, 3, 4 ranks:
// equal bits everywhere is order-freedom across ranks. Also: the ledger books 32 bytes per element, broadcast.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "helpers.h"

using namespace shardlab;
using namespace shardlab::test;

namespace {

uint64_t mix(uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

int terms_per_element(int rank, size_t i) { return 1 + static_cast<int>((i * 7 + static_cast<size_t>(rank)) % 5); }

// Term k of element i on rank `rank`. Elements i ≡ 0 (mod 3) spread over ±600 binades, i ≡ 1 over ±60; for
// i ≡ 2 the first term is ±2^40·m(i), + on even ranks and − on odd ones (they cancel on an even number of
// ranks), the rest near 1 (their bits below 2^-32 fall out of the window the large ones set). One other term in
// 20 is a zero; element 3 gets an infinity on rank 0 (its sum is NaN).
double term(int rank, size_t i, int k) {
  if (i % 3 == 2 && k == 0) return (rank % 2 ? -1.0 : 1.0) * std::ldexp(1.0 + std::ldexp(double(i), -20), 40);
  if (i == 3 && rank == 0 && k == 0) return std::numeric_limits<double>::infinity();
  const uint64_t h = mix(mix(mix(0x5eed + static_cast<uint64_t>(rank)) + i) + static_cast<uint64_t>(k));
  const uint64_t g = mix(h);
  if (g % 20 == 0) return g & 64 ? 0.0 : -0.0;
  const double mantissa = 1.0 + std::ldexp(static_cast<double>(h >> 12), -52);  // [1, 2)
  const double sign = g & 1 ? -1.0 : 1.0;
  const int spread = i % 3 == 0 ? 600 : i % 3 == 1 ? 60 : 4;
  return sign * std::ldexp(mantissa, static_cast<int>((g >> 8) % (2 * spread + 1)) - spread);
}

// This rank's own terms, element by element.
std::vector<ExactSum> deposits(int rank, size_t n) {
  std::vector<ExactSum> s(n);
  for (size_t i = 0; i < n; ++i)
    for (int k = 0; k < terms_per_element(rank, i); ++k) exact_add(s[i], term(rank, i, k));
  return s;
}

// One process adding every rank's terms itself, last rank first.
std::vector<ExactSum> single_process_sums(int ranks, size_t n) {
  std::vector<ExactSum> s(n);
  for (size_t i = 0; i < n; ++i)
    for (int q = ranks - 1; q >= 0; --q)
      for (int k = 0; k < terms_per_element(q, i); ++k) exact_add(s[i], term(q, i, k));
  return s;
}

// Mismatching values (as doubles and floats) in [begin, end).
size_t value_mismatches(const std::vector<ExactSum>& a, const std::vector<ExactSum>& b, size_t begin, size_t end) {
  size_t bad = 0;
  for (size_t i = begin; i < end; ++i) {
    const double x = exact_value(a[i]), y = exact_value(b[i]);
    const float xf = exact_value_float(a[i]), yf = exact_value_float(b[i]);
    bad += std::memcmp(&x, &y, sizeof x) != 0 || std::memcmp(&xf, &yf, sizeof xf) != 0;
  }
  return bad;
}

std::vector<size_t> pattern(int p, size_t n, int N) {
  return p == 0 ? even(n, N) : p == 1 ? uneven(n, N) : one_chunk(n, N);
}

void check_exact_collectives(CommImpl impl) {
  const int N = world_size();
  CommLedger ledger;
  Communicator c = world(&ledger, impl);
  const int r = c.rank();
  for (size_t n : {size_t{0}, size_t{1}, size_t{5}, size_t{77}, size_t{1000}}) {
    const std::vector<ExactSum> mine = deposits(r, n), want = single_process_sums(N, n);
    for (int p = 0; p < 3; ++p) {
      const std::vector<size_t> counts = pattern(p, n, N), off = offsets(counts);
      INFO("n " << n << " pattern " << p << " rank " << r << " of " << N << " impl " << comm_impl_name(impl));
      std::vector<ExactSum> buf = mine;
      c.all_reduce(buf.data(), counts);
      CHECK(mismatches(buf.data(), want.data(), 0, n) == 0);  // the whole struct: bins, window, term count
      CHECK(value_mismatches(buf, want, 0, n) == 0);
      REQUIRE(!ledger.calls().empty());
      CHECK(ledger.calls().back().elem_bytes == 32);
      CHECK(ledger.calls().back().elements == n);

      buf = mine;
      Communicator::Pending pending = c.start_all_reduce(buf.data(), counts);
      c.wait(pending);
      CHECK(mismatches(buf.data(), want.data(), 0, n) == 0);

      buf = mine;
      c.reduce_scatter(buf.data(), counts);
      CHECK(mismatches(buf.data(), want.data(), off[r], off[r + 1]) == 0);
      c.all_gather(buf.data(), counts);  // ZeRO's way back: every member's reduced chunk, everywhere
      CHECK(mismatches(buf.data(), want.data(), 0, n) == 0);

      buf = mine;
      pending = c.start_reduce_scatter(buf.data(), counts);
      while (!c.progress(pending)) {}
      CHECK(mismatches(buf.data(), want.data(), off[r], off[r + 1]) == 0);
    }
    std::vector<ExactSum> buf = mine;
    c.all_reduce(buf.data(), n);  // the even-chunk overload
    CHECK(mismatches(buf.data(), want.data(), 0, n) == 0);
  }
}

}  // namespace

TEST_CASE("ring all-reduce and reduce-scatter of ExactSums equal one process's sums, bit for bit", "[exact][ring]") {
  check_exact_collectives(CommImpl::ring);
}

TEST_CASE("MPI's built-ins (--comm mpi) merge ExactSums to the same bits as one process", "[exact][mpi]") {
  check_exact_collectives(CommImpl::mpi);
}

TEST_CASE("the single-process sums are not trivial: NaN, cancellation, and plain sums that depend on the order",
          "[exact]") {
  const int N = world_size();
  const size_t n = 300;
  const std::vector<ExactSum> want = single_process_sums(N, n);
  CHECK(std::isnan(exact_value(want[3])));
  // Elements i ≡ 2 (mod 3): the ±2^40 terms cancel on an even number of ranks, leaving sums near 1.
  CHECK(std::fabs(exact_value(want[5])) < (N % 2 ? 0x1p41 : 0x1p10));
  CHECK(std::fabs(exact_value(want[5])) > (N % 2 ? 0x1p39 : 0.0));
  // A plain double sum of the same terms, in rank order and in the reverse: they differ somewhere (with more
  // than one term), which is what the ExactSum collectives must not.
  size_t orders_differ = 0, total_terms = 0;
  for (size_t i = 0; i < n; ++i) {
    double forward = 0, backward = 0;
    for (int q = 0; q < N; ++q)
      for (int k = 0; k < terms_per_element(q, i); ++k) forward += term(q, i, k), ++total_terms;
    for (int q = N - 1; q >= 0; --q)
      for (int k = terms_per_element(q, i) - 1; k >= 0; --k) backward += term(q, i, k);
    orders_differ += std::memcmp(&forward, &backward, sizeof forward) != 0;
  }
  CHECK(orders_differ > 0);
  CHECK(total_terms > n);
}

TEST_CASE("ExactSums travel by broadcast and point to point as 32 opaque bytes", "[exact]") {
  const int N = world_size();
  CommLedger ledger;
  for (CommImpl impl : {CommImpl::ring, CommImpl::mpi}) {
    Communicator c = world(&ledger, impl);
    const int r = c.rank(), root = N - 1;
    const size_t n = 513;
    const std::vector<ExactSum> roots = deposits(root, n);
    std::vector<ExactSum> buf = r == root ? roots : std::vector<ExactSum>(n);
    c.broadcast(buf.data(), n, root);
    CHECK(mismatches(buf.data(), roots.data(), 0, n) == 0);
    CHECK(ledger.calls().back().elem_bytes == 32);
    if (N < 2) continue;
    std::vector<ExactSum> got(n);  // each member sends its deposits to the next, receives the previous one's
    c.sendrecv(deposits(r, n).data(), n, (r + 1) % N, got.data(), n, (r + N - 1) % N, 7);
    const std::vector<ExactSum> from_prev = deposits((r + N - 1) % N, n);
    CHECK(mismatches(got.data(), from_prev.data(), 0, n) == 0);
  }
}
