// Shared helpers for the MPI tests: inputs whose sum over ranks has a closed form, chunk-count
// patterns (even, uneven with empty chunks, everything in one chunk), a made-up node layout, and
// element comparison that counts mismatches (one CHECK per buffer, not per element).
// Every rank generates every rank's inputs, so the expected result is computed locally.
#pragma once
#include <cstdint>
#include <cstring>
#include <numeric>
#include <vector>

#include "comm/communicator.h"
#include "core/bf16.h"

namespace shardlab {
namespace test {

inline int& world_size_ref() {
  static int n = 1;
  return n;
}
inline void set_world_size(int n) { world_size_ref() = n; }
inline int world_size() { return world_size_ref(); }

// Member m sits on node m / 2: two members per node, so a ring of 3+ members crosses nodes.
inline std::vector<int> two_per_node(int n) {
  std::vector<int> v(n);
  for (int m = 0; m < n; ++m) v[m] = m / 2;
  return v;
}

inline Communicator world(CommLedger* ledger, CommImpl impl = CommImpl::ring) {
  return Communicator::world(ledger, nullptr, two_per_node(world_size()), impl);
}

// Input of member r, element i, as an integer: f(r, i) = (r + 1)·g(i) + r with g(i) = i mod 5 - 2, so
// Σ_r f(r, i) = g(i)·N(N+1)/2 + N(N-1)/2. Every partial sum is an integer of magnitude ≤ 100 for N ≤ 8:
// exact in float, double and bf16 (8 significant bits: integers up to 256).
inline int64_t f_int(int r, size_t i) { return (r + 1) * (static_cast<int64_t>(i % 5) - 2) + r; }
inline int64_t sum_int(int n, size_t i) {
  return (static_cast<int64_t>(i % 5) - 2) * n * (n + 1) / 2 + n * (n - 1) / 2;
}

template <class T>
inline T from_int(int64_t v) {
  return static_cast<T>(v);
}
template <>
inline bf16 from_int<bf16>(int64_t v) {
  return to_bf16(static_cast<float>(v));
}
// int64 gets large values too, so a 32-bit truncation anywhere would show.
template <class T>
inline T input(int r, size_t i) {
  return from_int<T>(f_int(r, i));
}
template <>
inline int64_t input<int64_t>(int r, size_t i) {
  return f_int(r, i) + (int64_t{1} << 40) * (r + 1);
}
template <class T>
inline T expected_sum(int n, size_t i) {
  return from_int<T>(sum_int(n, i));
}
template <>
inline int64_t expected_sum<int64_t>(int n, size_t i) {
  return sum_int(n, i) + (int64_t{1} << 40) * n * (n + 1) / 2;
}

// Chunk patterns over n elements for N members.
inline std::vector<size_t> even(size_t n, int N) {
  std::vector<size_t> c(N, n / N);
  for (size_t r = 0; r < n % N; ++r) ++c[r];
  return c;
}
// Uneven, with empty chunks: weights r+1, but every member r ≡ 1 (mod 3) gets nothing.
inline std::vector<size_t> uneven(size_t n, int N) {
  std::vector<size_t> w(N);
  for (int r = 0; r < N; ++r) w[r] = (r % 3 == 1) ? 0 : r + 1;
  size_t W = std::accumulate(w.begin(), w.end(), size_t{0}), given = 0;
  std::vector<size_t> c(N, 0);
  for (int r = 0; r < N; ++r) {
    c[r] = n * w[r] / W;
    given += c[r];
  }
  c[0] += n - given;  // member 0 always has weight 1
  return c;
}
inline std::vector<size_t> one_chunk(size_t n, int N) {  // everything owned by the last member
  std::vector<size_t> c(N, 0);
  c[N - 1] = n;
  return c;
}
inline std::vector<size_t> offsets(const std::vector<size_t>& c) {
  std::vector<size_t> o(c.size() + 1, 0);
  for (size_t k = 0; k < c.size(); ++k) o[k + 1] = o[k] + c[k];
  return o;
}
// Owner of element i under counts c.
inline int owner(const std::vector<size_t>& c, size_t i) {
  size_t end = 0;
  for (size_t k = 0; k < c.size(); ++k)
    if (i < (end += c[k])) return static_cast<int>(k);
  return -1;
}

// Bitwise comparison of [begin, end): the number of differing elements.
template <class T>
size_t mismatches(const T* a, const T* b, size_t begin, size_t end) {
  size_t bad = 0;
  for (size_t i = begin; i < end; ++i) bad += std::memcmp(&a[i], &b[i], sizeof(T)) != 0;
  return bad;
}

}  // namespace test
}  // namespace shardlab
