// The ring collectives (and MPI's built-ins, --comm mpi) against closed-form rank sums: integer-valued
// inputs, exact in every type, for n = 0, 1, 7, 1000, 4099 and even, uneven (with empty chunks) and
// one-chunk splits; blocking and non-blocking forms.
#include <catch2/catch.hpp>

#include "helpers.h"

using namespace shardlab;
using namespace shardlab::test;

namespace {

std::vector<size_t> pattern(int p, size_t n, int N) {
  return p == 0 ? even(n, N) : p == 1 ? uneven(n, N) : one_chunk(n, N);
}

template <class T>
void check_sums(CommImpl impl, bool nonblocking) {
  const int N = world_size();
  Communicator c = world(nullptr, impl);
  const int r = c.rank();
  REQUIRE(c.size() == N);
  for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{1000}, size_t{4099}}) {
    for (int p = 0; p < 3; ++p) {
      const std::vector<size_t> counts = pattern(p, n, N);
      const std::vector<size_t> off = offsets(counts);
      INFO("n " << n << " pattern " << p << " rank " << r << " of " << N);
      std::vector<T> want(n), mine(n), buf(n);
      for (size_t i = 0; i < n; ++i) {
        want[i] = expected_sum<T>(N, i);
        mine[i] = input<T>(r, i);
      }
      auto run = [&](int which) {  // 0 reduce_scatter, 1 all_gather, 2 all_reduce
        if (nonblocking) {
          Communicator::Pending pend = which == 0   ? c.start_reduce_scatter(buf.data(), counts)
                                       : which == 1 ? c.start_all_gather(buf.data(), counts)
                                                    : c.start_all_reduce(buf.data(), counts);
          while (!c.progress(pend)) {}
        } else if (which == 0) {
          c.reduce_scatter(buf.data(), counts);
        } else if (which == 1) {
          c.all_gather(buf.data(), counts);
        } else {
          c.all_reduce(buf.data(), counts);
        }
      };
      buf = mine;
      run(0);
      CHECK(mismatches(buf.data(), want.data(), off[r], off[r + 1]) == 0);

      // all_gather: only my chunk is valid before; poison the rest.
      std::vector<T> gathered(n);
      for (size_t i = 0; i < n; ++i) {
        gathered[i] = input<T>(owner(counts, i), i);
        buf[i] = owner(counts, i) == r ? mine[i] : from_int<T>(99);
      }
      run(1);
      CHECK(mismatches(buf.data(), gathered.data(), 0, n) == 0);

      buf = mine;
      run(2);
      CHECK(mismatches(buf.data(), want.data(), 0, n) == 0);

      if (!nonblocking) {  // the even-chunk overload
        buf = mine;
        c.all_reduce(buf.data(), n);
        CHECK(mismatches(buf.data(), want.data(), 0, n) == 0);
      }
    }
  }
}

}  // namespace

TEMPLATE_TEST_CASE("ring collectives give the closed-form rank sums", "[sum][ring]", float, double, bf16, int64_t,
                   int32_t) {
  check_sums<TestType>(CommImpl::ring, false);
}

TEMPLATE_TEST_CASE("non-blocking ring collectives give the closed-form rank sums", "[sum][ring][nonblocking]", float,
                   double, bf16, int64_t) {
  check_sums<TestType>(CommImpl::ring, true);
}

TEMPLATE_TEST_CASE("MPI's built-ins (--comm mpi) give the same sums as the ring", "[sum][mpi]", float, double, bf16,
                   int64_t) {
  check_sums<TestType>(CommImpl::mpi, false);
  check_sums<TestType>(CommImpl::mpi, true);
}

TEST_CASE("bf16 sums round after every addition", "[sum][bf16]") {
  // 256 + 1 + 1 in bf16: the ring adds one member at a time and rounds each time, so 256 + 1 rounds back
  // to 256 (spacing 2 there, tie to even) and so does the next + 1: the result is 256, not 258.
  const int N = world_size();
  if (N < 3) return;
  Communicator c = world(nullptr);
  const int r = c.rank();
  // Chunk 0 (owned by member 0) is summed starting at member 1: x1 + x2 + … + x_{N-1} + x0.
  std::vector<bf16> buf(N, to_bf16(r == 1 ? 256.f : (r == 0 ? 0.f : 1.f)));
  c.reduce_scatter(buf.data(), std::vector<size_t>(N, 1));
  if (r == 0) CHECK(from_bf16(buf[0]) == 256.f);
}

TEST_CASE("buffers of many ring segments (256 KiB each) sum exactly", "[sum][ring][large]") {
  const int N = world_size();
  Communicator c = world(nullptr);
  const int r = c.rank();
  const size_t n = 700001;  // 2.8 MB of floats: several segments per chunk, several rotations of the slots
  std::vector<float> want(n), mine(n);
  for (size_t i = 0; i < n; ++i) {
    want[i] = expected_sum<float>(N, i);
    mine[i] = input<float>(r, i);
  }
  for (const auto& counts : {even(n, N), uneven(n, N)}) {
    std::vector<float> a = mine, b = mine;
    c.all_reduce(a.data(), counts);
    auto p = c.start_all_reduce(b.data(), counts);
    c.wait(p);
    CHECK(mismatches(a.data(), want.data(), 0, n) == 0);
    CHECK(mismatches(b.data(), want.data(), 0, n) == 0);
    std::vector<float> s = mine;
    c.reduce_scatter(s.data(), counts);
    auto off = offsets(counts);
    CHECK(mismatches(s.data(), want.data(), off[r], off[r + 1]) == 0);
  }
}
