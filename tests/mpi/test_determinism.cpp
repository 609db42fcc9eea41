// The ring's DETERMINISM contract, with inputs chosen so the order of additions matters (1e8, 1, -1e8, …):
// chunk c is summed as ((x_{c+1} + x_{c+2}) + …) + x_c whatever the other chunks' counts, whatever else
// is in the buffer, blocking or not. This is what makes ZeRO/FSDP bit-identical to plain DP.
#include <catch2/catch.hpp>

#include <cmath>
#include <type_traits>

#include "helpers.h"

using namespace shardlab;
using namespace shardlab::test;

namespace {

// Values of very different magnitudes: (1e8 + 1) - 1e8 is 0 in float but 1e8 + (1 - 1e8) is 8.
const float kValues[8] = {1e8f, 1.f, -1e8f, 0.1f, 3.f, -7.5e7f, 1e-3f, 2.5e8f};
template <class T>
T x(int r, size_t i) {
  uint64_t h = (static_cast<uint64_t>(r) * 2654435761u + i * 40503u + (i >> 3) * 977u) >> 3;
  float v = kValues[h % 8];
  if constexpr (std::is_same<T, bf16>::value)
    return to_bf16(v);
  else if constexpr (std::is_same<T, double>::value)
    return std::abs(v) >= 1e7f ? v * 1e9 : v;  // 1e17 swamps 1
  else
    return v;
}
template <class T>
T add(T a, T b) {
  if constexpr (std::is_same<T, bf16>::value)
    return to_bf16(from_bf16(a) + from_bf16(b));
  else
    return a + b;
}
// The ring's order for chunk c: start at member c+1, add c+2, …, end with c.
template <class T>
T ring_fold(int c, size_t i, int N) {
  T acc = x<T>((c + 1) % N, i);
  for (int k = 2; k <= N; ++k) acc = add(acc, x<T>((c + k) % N, i));
  return acc;
}
template <class T>
T plain_fold(size_t i, int N) {  // 0, 1, …, N-1: a different grouping
  T acc = x<T>(0, i);
  for (int m = 1; m < N; ++m) acc = add(acc, x<T>(m, i));
  return acc;
}

template <class T>
void check_determinism() {
  const int N = world_size();
  Communicator c = world(nullptr);
  const int r = c.rank();
  const size_t n = 4099;
  std::vector<T> mine(n);
  for (size_t i = 0; i < n; ++i) mine[i] = x<T>(r, i);

  // The inputs really are order-sensitive: somewhere the ring's fold differs from 0, 1, …, N-1.
  size_t order_sensitive = 0;
  for (size_t i = 0; i < n; ++i) {
    T a = ring_fold<T>(owner(even(n, N), i), i, N), b = plain_fold<T>(i, N);
    order_sensitive += std::memcmp(&a, &b, sizeof(T)) != 0;
  }
  if (N >= 3) CHECK(order_sensitive > 0);

  const std::vector<std::vector<size_t>> splits = {even(n, N), uneven(n, N), one_chunk(n, N)};
  std::vector<std::vector<T>> rs_results;
  for (const auto& counts : splits) {
    const auto off = offsets(counts);
    std::vector<T> want(n);
    for (size_t i = 0; i < n; ++i) want[i] = ring_fold<T>(owner(counts, i), i, N);

    std::vector<T> buf = mine;
    c.reduce_scatter(buf.data(), counts);
    CHECK(mismatches(buf.data(), want.data(), off[r], off[r + 1]) == 0);
    rs_results.push_back(buf);

    std::vector<T> nb = mine;  // non-blocking, bit for bit
    auto p = c.start_reduce_scatter(nb.data(), counts);
    c.wait(p);
    CHECK(mismatches(nb.data(), buf.data(), off[r], off[r + 1]) == 0);

    buf = mine;  // all-reduce: every member ends with the owner's fold of every element
    c.all_reduce(buf.data(), counts);
    CHECK(mismatches(buf.data(), want.data(), 0, n) == 0);
    nb = mine;
    p = c.start_all_reduce(nb.data(), counts);
    while (!c.progress(p)) {}
    CHECK(mismatches(nb.data(), buf.data(), 0, n) == 0);
  }

  // Counts A vs B: an element owned by me under both splits has the same bits.
  for (size_t a = 0; a < splits.size(); ++a)
    for (size_t b = a + 1; b < splits.size(); ++b) {
      auto oa = offsets(splits[a]), ob = offsets(splits[b]);
      size_t lo = std::max(oa[r], ob[r]), hi = std::min(oa[r + 1], ob[r + 1]);
      if (lo < hi) CHECK(mismatches(rs_results[a].data(), rs_results[b].data(), lo, hi) == 0);
    }

  // Other data in the buffer: prepend 333 unrelated elements to chunk 0. Every element keeps its owner,
  // so chunks 1… (shifted by 333) and chunk 0's original part must come out bit-identical.
  const size_t pre = 333;
  std::vector<size_t> counts = splits[1], wider = counts;
  wider[0] += pre;
  std::vector<T> buf(pre + n);
  for (size_t i = 0; i < pre; ++i) buf[i] = x<T>(r + 5, i * 7);
  std::copy(mine.begin(), mine.end(), buf.begin() + pre);
  c.reduce_scatter(buf.data(), wider);
  auto off = offsets(counts);
  size_t bad = 0;
  for (size_t i = off[r]; i < off[r + 1]; ++i) bad += std::memcmp(&buf[pre + i], &rs_results[1][i], sizeof(T)) != 0;
  CHECK(bad == 0);
}

}  // namespace

TEMPLATE_TEST_CASE("ring sums follow the owner's fixed order, bit for bit", "[determinism]", float, double, bf16) {
  check_determinism<TestType>();
}
