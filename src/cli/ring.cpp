// `shardlab ring [--elements N] [--dtype f32|f64|bf16] [--repeat R] [--sizes-mb a,b,…]` under mpirun:
// all-reduces a buffer whose sum has a closed form with the hand-written ring and with MPI's
// built-in, checks both results element by element, checks every rank's bytes sent and received
// (from the comm ledger) against the ring formula 2·(payload − one chunk) — 2(N−1)/N·payload when N
// divides the payload — and times both. --sizes-mb instead sweeps payload sizes and prints the
// bandwidth of each (the `make bench` comparison). Exits 1 if any check fails.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

#include "cli/command.h"
#include "comm/communicator.h"
#include "core/bf16.h"
#include "report/format.h"
#include "train/memory_check.h"

namespace shardlab {

namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// Input element i of member r: small integers, so every partial sum is exact in every dtype.
double input(int r, size_t i) { return double(r + 1) + double(i % 7); }
double expected_sum(int n_ranks, size_t i) { return n_ranks * (n_ranks + 1) / 2.0 + n_ranks * double(i % 7); }

template <class E>
E from_double(double v) {
  return static_cast<E>(v);
}
template <>
bf16 from_double<bf16>(double v) {
  return to_bf16(float(v));
}
template <class E>
double to_double(E v) {
  return double(v);
}
template <>
double to_double<bf16>(bf16 v) {
  return from_bf16(v);
}

struct RunResult {
  bool correct;
  double seconds;
  CommCall bytes;
  int64_t first_wrong = -1;  // the first element whose sum differs (-1: none), with what it held
  double got = 0;
};

template <class E>
RunResult run(Communicator& comm, CommLedger& ledger, size_t n, int repeat, CommImpl impl) {
  comm.set_impl(impl);
  std::vector<E> buf(n);
  RunResult res{true, 1e300, {}};
  for (int rep = 0; rep < repeat; ++rep) {
    for (size_t i = 0; i < n; ++i) buf[i] = from_double<E>(input(comm.rank(), i));
    const uint64_t seq = ledger.next_seq();
    comm.barrier();
    const double t0 = now_s();
    comm.all_reduce(buf.data(), n);
    const double t = now_s() - t0;
    res.seconds = std::min(res.seconds, t);
    const std::string op = "all_reduce";
    res.bytes = ledger.total_since(seq, op);
    for (size_t i = 0; i < n && res.correct; ++i)
      if (to_double(buf[i]) != expected_sum(comm.size(), i)) {
        res.correct = false;
        res.first_wrong = int64_t(i);
        res.got = to_double(buf[i]);
      }
  }
  return res;
}

// The ring's reduce-scatter alone: member r must end with chunk r summed over every member — the shard that
// ZeRO updates. Returns the first element of this member's chunk that is not the sum (-1: none), and its value.
template <class E>
std::pair<int64_t, double> owner_check(Communicator& comm, size_t n) {
  comm.set_impl(CommImpl::ring);
  const std::vector<size_t> counts = comm.even_counts(n);
  std::vector<E> buf(n);
  for (size_t i = 0; i < n; ++i) buf[i] = from_double<E>(input(comm.rank(), i));
  comm.reduce_scatter(buf.data(), counts);
  size_t first = 0;
  for (int q = 0; q < comm.rank(); ++q) first += counts[q];
  for (size_t i = first; i < first + counts[comm.rank()]; ++i)
    if (to_double(buf[i]) != expected_sum(comm.size(), i)) return {int64_t(i), to_double(buf[i])};
  return {-1, 0.0};
}

template <class E>
int check(Communicator& comm, CommLedger& ledger, size_t n, int repeat, const char* dtype) {
  const int N = comm.size(), r = comm.rank();
  RunResult ring = run<E>(comm, ledger, n, repeat, CommImpl::ring);
  RunResult mpi = run<E>(comm, ledger, n, repeat, CommImpl::mpi);
  const std::pair<int64_t, double> own = owner_check<E>(comm, n);
  const std::vector<int64_t> own_at = comm.all_gather_value(own.first);
  const std::vector<double> own_got = comm.all_gather_value(own.second);
  // The ring's bytes, from the chunk sizes: send everything but my chunk (reduce-scatter) and
  // everything but my successor's chunk (all-gather); receive what my predecessor sends: everything
  // but its chunk (reduce-scatter) and everything but mine (all-gather).
  const std::vector<size_t> c = comm.even_counts(n);
  const uint64_t esize = sizeof(E);
  const uint64_t sent_formula = (2 * n - c[r] - c[(r + 1) % N]) * esize;
  const uint64_t recv_formula = (2 * n - c[(r + N - 1) % N] - c[r]) * esize;
  std::vector<uint64_t> sent = comm.all_gather_value(ring.bytes.sent()),
                        recv = comm.all_gather_value(ring.bytes.recv()), sent_f = comm.all_gather_value(sent_formula),
                        recv_f = comm.all_gather_value(recv_formula);
  std::vector<int> sums_ok = comm.all_gather_value(int(ring.correct && mpi.correct));
  std::vector<int64_t> wrong = comm.all_gather_value(ring.first_wrong);
  std::vector<double> got = comm.all_gather_value(ring.got);
  std::vector<double> t_ring = comm.all_gather_value(ring.seconds), t_mpi = comm.all_gather_value(mpi.seconds);
  int all_sums = 1, all_bytes = 1;
  // A rank's received bytes must be what its neighbour sent it: check the formula for recv too, on rank 0.
  if (r == 0) {
    const double payload = double(n) * esize;
    std::printf("ring all-reduce of %zu %s elements (%s) on %d ranks; closed-form sums checked for ring and MPI\n", n,
                dtype, format_bytes(payload).c_str(), N);
    std::printf("  rank  bytes sent    formula  bytes recv    formula  result  ring time  mpi time\n");
    for (int q = 0; q < N; ++q) {
      const bool bytes_ok = sent[q] == sent_f[q] && recv[q] == recv_f[q];
      all_sums &= sums_ok[q];
      all_bytes &= bytes_ok;
      std::printf("  %4d  %10llu %10llu  %10llu %10llu  %6s  %8.3f ms %8.3f ms\n", q, (unsigned long long)sent[q],
                  (unsigned long long)sent_f[q], (unsigned long long)recv[q], (unsigned long long)recv_f[q],
                  !sums_ok[q] ? "sums"
                  : !bytes_ok ? "bytes"
                              : "ok",
                  1e3 * t_ring[q], 1e3 * t_mpi[q]);
    }
    for (int q = 0; q < N; ++q)
      if (wrong[q] >= 0)
        std::printf("  rank %d: element %lld is %.17g, expected %.17g (the first that differs)\n", q,
                    (long long)wrong[q], got[q], expected_sum(N, size_t(wrong[q])));
    std::printf("  per rank 2(N-1)/N × payload = %.1f bytes; sent/payload = %.4f (N-independent → 2 as N grows, C8)\n",
                2.0 * (N - 1) / N * payload, double(sent[0]) / payload);
    std::printf("  ring / MPI time on rank 0: %.2f\n", t_ring[0] / t_mpi[0]);
    int owners = 1;
    for (int q = 0; q < N; ++q)
      if (own_at[q] >= 0) {
        owners = 0;
        std::printf(
            "  rank %d: after the reduce-scatter alone, element %lld of its chunk %d is %.17g, expected %.17g\n", q,
            (long long)own_at[q], q, own_got[q], expected_sum(N, size_t(own_at[q])));
      }
    std::printf("sums: %s\nbytes: %s\n", all_sums ? "PASS (every element of every rank)" : "FAIL",
                all_bytes ? "PASS (= formula on every rank)" : "FAIL (sent or received bytes differ from the formula)");
    std::printf("reduce-scatter: %s\n", owners ? "PASS (member r holds chunk r summed: ZeRO's shard)"
                                               : "FAIL (a member does not end with its own chunk summed)");
    std::printf("result: %s\n", all_sums && all_bytes && owners ? "PASS" : "FAIL");
    return all_sums && all_bytes && owners ? 0 : 1;
  }
  int owners = 1;
  for (int64_t at : own_at) owners &= at < 0;
  return all_sums && all_bytes && owners ? 0 : 1;
}

int sweep(Communicator& comm, CommLedger& ledger, const std::vector<double>& sizes_mb, int repeat) {
  if (comm.rank() == 0)
    std::printf("%10s  %14s  %14s  %8s   (bus bandwidth = 2(N-1)/N × payload / time, N = %d)\n", "payload", "ring GB/s",
                "MPI GB/s", "ring/MPI", comm.size());
  for (double mb : sizes_mb) {
    const size_t n = static_cast<size_t>(mb * 1e6 / sizeof(float));
    RunResult ring = run<float>(comm, ledger, n, repeat, CommImpl::ring);
    RunResult mpi = run<float>(comm, ledger, n, repeat, CommImpl::mpi);
    std::vector<double> tr = comm.all_gather_value(ring.seconds), tm = comm.all_gather_value(mpi.seconds);
    double wr = 0, wm = 0;  // the slowest rank sets the time
    for (double t : tr) wr = std::max(wr, t);
    for (double t : tm) wm = std::max(wm, t);
    const double bus = 2.0 * (comm.size() - 1) / comm.size() * double(n) * sizeof(float) / 1e9;
    if (comm.rank() == 0) std::printf("%7.0f MB  %14.2f  %14.2f  %8.2f\n", mb, bus / wr, bus / wm, wm / wr);
    if (!ring.correct || !mpi.correct) return 1;
  }
  return 0;
}

}  // namespace

int ring_command(const CommandArgs& args, const Runtime& rt) {
  uint64_t n = 1 << 20;
  int repeat = 3;
  enum class Element { f32, f64, bf16 } element = Element::f32;
  static constexpr Spelling<Element> kElementWords[] = {
      {"f32", Element::f32}, {"f64", Element::f64}, {"bf16", Element::bf16}};
  std::string sizes;
  Flags flags(
      "shardlab ring",
      "The hand-written ring all-reduce against MPI's: closed-form sums, bytes vs formula, time (run under mpirun).");
  flags.add("--elements", n, "payload elements");
  flags.choice("--dtype", element, kElementWords, "element type");
  flags.add("--repeat", repeat, "timed repetitions (the best counts)", 1, 1000000);
  flags.add("--sizes-mb", sizes, "instead: sweep f32 payloads of these sizes in MB (e.g. 1,4,16) and print bandwidths");
  if (int rc = parse_command(flags, args, rt, "shardlab ring"); rc >= 0) return rc;
  std::vector<double> mb;
  std::stringstream s(sizes);
  for (std::string item; std::getline(s, item, ',');) {
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);  // a plain decimal: no sign, space, hex or exponent
    if (item.empty() || *end || item.find_first_not_of("0123456789.") != std::string::npos ||
        !(v >= 0.001 && v <= 4096))
      throw std::invalid_argument("--sizes-mb expects sizes in MB in [0.001, 4096] separated by commas, got '" + sizes +
                                  "'");
    mb.push_back(v);
  }
  // A flag that would change nothing is refused, never silently dropped: the sweep has its own sizes, in f32.
  if (flags.given("--sizes-mb"))
    for (const char* other : {"--elements", "--dtype"})
      if (flags.given(other))
        throw std::invalid_argument(std::string("--sizes-mb sweeps f32 payloads of its own sizes: drop ") + other);
  if (n < 1) throw std::invalid_argument("--elements expects at least 1 element to all-reduce");
  // The payload and its copy per rank, against what the machine has (the ranks share it).
  const double elem = element == Element::f64 ? 8 : element == Element::bf16 ? 2 : 4;
  double largest = double(n) * elem;
  for (double m : mb) largest = std::max(largest, m * 1e6);
  const double available = available_memory_bytes();
  if (available > 0 && 2 * largest * rt.size() > available)
    throw std::invalid_argument("a payload of " + format_bytes(largest) + " on " + std::to_string(rt.size()) +
                                " ranks needs " + format_bytes(2 * largest * rt.size()) + ", but " +
                                format_bytes(available) + " is available; give fewer --elements");
  CommLedger ledger;
  Communicator world = Communicator::world(&ledger, nullptr, {});
  if (!mb.empty()) return sweep(world, ledger, mb, repeat);
  if (element == Element::f64) return check<double>(world, ledger, n, repeat, "f64");
  if (element == Element::bf16) return check<bf16>(world, ledger, n, repeat, "bf16");
  return check<float>(world, ledger, n, repeat, "f32");
}

}  // namespace shardlab
