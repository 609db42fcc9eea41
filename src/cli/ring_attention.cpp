// `shardlab ring-attention [--split zigzag|contiguous --seq N --heads NH --head-dim HD --batch B --dtype f64|f32
// --dropout P --logit-scale X --rtol R --seed S]` under mpirun -np c: ring attention (claim C24) alone, against
// the single process. Q, K, V and dO are drawn from the counter-based RNG by GLOBAL index, so every rank knows the
// whole tensors; each rank runs the trainer's ContextParallelAttention on its tokens (K/V blocks around the ring,
// each block's partial softmax folded in by model/ring_merge.cpp) and compares its rows of the output, the
// log-sum-exp, dQ, dK and dV with flash attention on the whole sequence, which every rank computes itself.
// --logit-scale multiplies Q so that the scores reach the thousands: a merge that works with e^m instead of the
// log-sum-exp rule overflows there. Prints the ring's schedule (which block each rank holds at each step, and its
// (query chunk, key chunk) pairs: whole, diagonal or skipped), each rank's attention FLOPs from the FLOP counter,
// one verdict per tensor (the largest difference relative to the tensor's largest element) and, for a failing
// tensor, each rank's first element past the tolerance. Exits 0 only if all five agree.
// Leaves out: tensor parallelism (every rank holds every head) and timing (lesson 14 and `make bench` measure it).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/command.h"
#include "comm/communicator.h"
#include "core/flops.h"
#include "core/ledger.h"
#include "core/rng.h"
#include "model/block.h"
#include "model/config.h"
#include "model/dropout.h"
#include "model/flash_attention.h"
#include "model/flash_blocks.h"
#include "model/token_positions.h"
#include "optim/recipe.h"
#include "parallel/context_parallel.h"
#include "report/format.h"
#include "train/memory_check.h"

namespace shardlab {

namespace {

struct Problem {
  int B = 1, T = 0, NH = 2, HD = 16;
  ContextSplit split = ContextSplit::zigzag;
  double dropout = 0.1, logit_scale = 1, rtol = 0;
  uint64_t seed = 1234;
  int C() const { return NH * HD; }
};

// One tensor on this rank: the largest difference relative to the whole tensor's largest element (+inf where
// the rank's value is not a finite number), and the first element past the tolerance in the rank's own order.
struct TensorCheck {
  static constexpr int kValues = 8;  // what each rank sends rank 0
  double worst = 0, found = 0, sample = 0, head = 0, pos = 0, col = 0, want = 0, got = 0;
  void add(double g, double w, double scale, double tol, int b, int h, int p, int c) {
    const double rel = std::isfinite(g) ? std::fabs(g - w) / scale : std::numeric_limits<double>::infinity();
    worst = std::max(worst, rel);
    if (found == 0 && !(rel <= tol)) found = 1, sample = b, head = h, pos = p, col = c, want = w, got = g;
  }
  void append(std::vector<double>& v) const { v.insert(v.end(), {worst, found, sample, head, pos, col, want, got}); }
};

template <class T>
double largest(const std::vector<T>& v) {
  double m = 0;
  for (T x : v) m = std::max(m, std::fabs(double(x)));
  return m > 0 ? m : 1;
}

// (query chunk, key chunk) pairs of one step for one rank: whole (the key chunk is earlier), diagonal, skipped.
struct PairCounts {
  int whole = 0, diagonal = 0, skipped = 0;
};
PairCounts pairs_of(const TokenPositions& q, const TokenPositions& k) {
  PairCounts n;
  for (int qr = 0; qr < q.runs; ++qr)
    for (int kr = 0; kr < k.runs; ++kr)
      (k.chunk[kr] < q.chunk[qr] ? n.whole : k.chunk[kr] == q.chunk[qr] ? n.diagonal : n.skipped) += 1;
  return n;
}

std::string positions_text(const TokenPositions& p) {
  std::string s;
  for (int r = 0; r < p.runs; ++r)
    s += (r ? " ∪ [" : "[") + std::to_string(p.first[r]) + ", " + std::to_string(p.first[r] + p.run) + ")";
  return s;
}

void print_layout(const Problem& P, int c, const std::vector<TokenPositions>& pos, const char* dtype) {
  const bool zz = P.split == ContextSplit::zigzag && c > 1;
  std::printf("ring attention over c = %d rank%s (claim C24), %s split: %d tokens in %d chunks of %d", c,
              c > 1 ? "s" : "", word_of(kContextSplitWords, P.split), P.T, zz ? 2 * c : c, pos[0].run);
  if (zz) std::printf("; rank r holds chunks r and %d−r", 2 * c - 1);
  std::printf(
      "\n  batch %d, %d heads of %d, %s, dropout %g, logit scale %g; Q, K, V and dO drawn by global index "
      "(seed %llu)\n",
      P.B, P.NH, P.HD, dtype, P.dropout, P.logit_scale, static_cast<unsigned long long>(P.seed));
  for (int r = 0; r < c; ++r) std::printf("  rank %d holds positions %s\n", r, positions_text(pos[r]).c_str());
  std::printf(
      "\nring schedule: at step s rank r computes on the K/V block of rank (r − s) mod c; its (query chunk, "
      "key chunk) pairs are whole / diagonal / skipped\nstep");
  auto cell = [c](int r, const std::string& text) {  // padded to a column, but no trailing blanks
    std::printf(r + 1 < c ? "  %-16s" : "  %s", text.c_str());
  };
  for (int r = 0; r < c; ++r) cell(r, "rank " + std::to_string(r));
  std::printf("\n");
  for (int s = 0; s < c; ++s) {
    std::printf("%4d", s);
    for (int r = 0; r < c; ++r) {
      const int k = (r - s + c) % c;
      const PairCounts n = pairs_of(pos[r], pos[k]);
      cell(r, "block " + std::to_string(k) + ": " + std::to_string(n.whole) + "/" + std::to_string(n.diagonal) + "/" +
                  std::to_string(n.skipped));
    }
    std::printf("\n");
  }
}

template <class T>
int check(Communicator& world, Communicator& cp, const Problem& P, const char* dtype) {
  const int c = cp.size(), r = cp.rank(), B = P.B, Tn = P.T, NH = P.NH, HD = P.HD, C = P.C(), C3 = 3 * C;
  ModelSlice slice;
  slice.cp = c, slice.cp_rank = r, slice.cp_split = P.split;
  const TokenPositions mine = slice.positions(Tn);
  const int Tc = mine.count();

  // The whole tensors, on every rank: qkv (B, T, NH, 3, HD) with Q scaled, dO (B, T, C).
  std::vector<T> qkv(size_t(B) * Tn * C3), dout(size_t(B) * Tn * C);
  const RngStream qs = rng_stream(P.seed, "ring-attention:qkv"), ds = rng_stream(P.seed, "ring-attention:dout");
  for (size_t i = 0; i < qkv.size(); ++i) qkv[i] = T(qs.normal(i) * ((i % (3 * HD)) < size_t(HD) ? P.logit_scale : 1));
  for (size_t i = 0; i < dout.size(); ++i) dout[i] = T(ds.normal(i));

  // The single process: flash attention on the whole sequence.
  std::vector<T> out(dout.size()), lse(size_t(B) * NH * Tn), d_qkv(qkv.size()), scratch(flash_scratch_elements());
  const AttentionDims ad{B, Tn, C, NH};
  const Dropout whole_drop = Dropout::make(P.dropout, P.seed, "dropout:attn", 0, 0, 0, Tn, C, NH);
  flash_attention_forward(out.data(), lse.data(), qkv.data(), ad, whole_drop, scratch.data());
  flash_attention_backward(d_qkv.data(), dout.data(), out.data(), qkv.data(), lse.data(), ad, whole_drop,
                           scratch.data());

  // This rank's tokens, as the trainer's block holds them (ModelChunk::dims), through the trainer's ring.
  BlockDims d;
  d.B = B, d.T = Tn, d.C = C, d.NH = NH, d.HD = HD, d.F = 4 * C, d.T_ctx = Tc, d.T_local = Tc;
  d.heads_total = NH, d.pos = mine;
  const Dropout drop = Dropout::make(P.dropout, P.seed, "dropout:attn", 0, 0, 0, Tn, C, NH, 0, 0, mine);
  auto row = [&](int b, int i) { return size_t(b) * Tn + mine.at(i); };  // local row → whole row
  std::vector<T> qkv_r(size_t(B) * Tc * C3), dout_r(size_t(B) * Tc * C);
  for (int b = 0; b < B; ++b)
    for (int i = 0; i < Tc; ++i) {
      std::copy_n(&qkv[row(b, i) * C3], C3, &qkv_r[(size_t(b) * Tc + i) * C3]);
      std::copy_n(&dout[row(b, i) * C], C, &dout_r[(size_t(b) * Tc + i) * C]);
    }
  MemoryLedger mem;
  ContextParallelAttention<T> ring(cp, nullptr, slice, Tn, B, NH, HD, mem);
  std::vector<T> out_r(dout_r.size()), lse_r(size_t(B) * NH * Tc), d_qkv_r(qkv_r.size());
  double flops_fwd, flops_bwd;
  {
    AttentionFlops scope;
    const double f0 = flop_counter().attention;
    ring.attention_forward(out_r.data(), lse_r.data(), qkv_r.data(), d, drop, nullptr);
    const double f1 = flop_counter().attention;
    ring.attention_backward(d_qkv_r.data(), dout_r.data(), out_r.data(), qkv_r.data(), lse_r.data(), d, drop, nullptr);
    flops_fwd = f1 - f0, flops_bwd = flop_counter().attention - f1;
  }

  // Every element of this rank's rows against the whole tensor's.
  const char* names[] = {"output", "log-sum-exp", "dQ", "dK", "dV"};
  const char* shapes[] = {"(B, T, C)", "(B, NH, T)", "(B, T, C)", "(B, T, C)", "(B, T, C)"};
  TensorCheck t[5];
  const double s_out = largest(out), s_lse = largest(lse);
  double s_grad[3] = {0, 0, 0};
  for (size_t i = 0; i < d_qkv.size(); ++i)
    s_grad[(i / HD) % 3] = std::max(s_grad[(i / HD) % 3], std::fabs(double(d_qkv[i])));
  for (int b = 0; b < B; ++b)
    for (int i = 0; i < Tc; ++i)
      for (int h = 0; h < NH; ++h) {
        const int p = mine.at(i);
        t[1].add(lse_r[(size_t(b) * NH + h) * Tc + i], lse[(size_t(b) * NH + h) * Tn + p], s_lse, P.rtol, b, h, p, 0);
        for (int e = 0; e < HD; ++e) {
          const size_t at = (size_t(b) * Tc + i) * C + h * HD + e, whole = row(b, i) * C + h * HD + e;
          t[0].add(out_r[at], out[whole], s_out, P.rtol, b, h, p, e);
          const size_t q_at = (size_t(b) * Tc + i) * C3 + h * 3 * HD + e, q_whole = row(b, i) * C3 + h * 3 * HD + e;
          for (int j = 0; j < 3; ++j)  // j: q, k, v
            t[2 + j].add(d_qkv_r[q_at + j * HD], d_qkv[q_whole + j * HD], s_grad[j] > 0 ? s_grad[j] : 1, P.rtol, b, h,
                         p, e);
        }
      }
  std::vector<double> sent;
  for (const TensorCheck& x : t) x.append(sent);
  sent.insert(sent.end(), {flops_fwd, flops_bwd});
  const int K = int(sent.size());
  const std::vector<double> all = world.all_gather_values(sent);
  auto at = [&](int rank, int tensor, int value) {
    return all[size_t(rank) * K + tensor * TensorCheck::kValues + value];
  };
  bool pass[5], ok = true;
  double worst[5];
  for (int x = 0; x < 5; ++x) {
    worst[x] = 0;
    for (int q = 0; q < c; ++q) worst[x] = std::max(worst[x], at(q, x, 0));
    pass[x] = worst[x] <= P.rtol;
    ok = ok && pass[x];
  }
  if (world.rank() != 0) return ok ? 0 : 1;

  std::vector<TokenPositions> pos;
  for (int q = 0; q < c; ++q) pos.push_back(TokenPositions::of_rank(Tn, c, q, P.split));
  print_layout(P, c, pos, dtype);
  std::printf(
      "\nattention FLOPs per rank (the FLOP counter: Q·Kᵀ, P·V and their backward, tiles actually multiplied)\n");
  const double first = all[K - 2] + all[K - 1];
  for (int q = 0; q < c; ++q) {
    const double f = all[size_t(q) * K + K - 2], bw = all[size_t(q) * K + K - 1];
    std::printf("  rank %d  %9.4g MFLOP  (forward %.4g, backward %.4g)  %.2f× rank 0's\n", q, (f + bw) / 1e6, f / 1e6,
                bw / 1e6, (f + bw) / first);
  }
  std::printf("  %s\n", P.split == ContextSplit::zigzag
                            ? "zigzag: every rank holds an early and a late chunk, so the work is equal"
                            : "contiguous: rank r attends to r whole chunks and its diagonal, the last ~(2c−1)× the "
                              "first's work");

  std::printf(
      "\nevery element of every rank against flash attention on the whole sequence (difference relative "
      "to the tensor's largest element, tolerance %.0e):\n",
      P.rtol);
  for (int x = 0; x < 5; ++x) {
    std::printf("%-12s %-11s max rel diff %9.3g  %s\n", names[x], shapes[x], worst[x], pass[x] ? "PASS" : "FAIL");
    for (int q = 0; q < c && !pass[x]; ++q) {
      if (at(q, x, 1) == 0) continue;
      std::printf("  rank %d: %s's first element past the tolerance: sample %d, head %d, position %d", q, names[x],
                  int(at(q, x, 2)), int(at(q, x, 3)), int(at(q, x, 4)));
      if (x != 1) std::printf(", column %d", int(at(q, x, 5)));
      std::printf(": expected %.17g, got %.17g\n", at(q, x, 6), at(q, x, 7));
    }
  }
  if (ok) {
    std::printf("result: ring attention over %d rank%s equals the single process's: output, log-sum-exp, dQ, dK, dV\n",
                c, c > 1 ? "s" : "");
  } else {
    std::string bad;
    for (int x = 0; x < 5; ++x)
      if (!pass[x]) bad += std::string(bad.empty() ? "" : ", ") + names[x];
    std::printf("result: MISMATCH between ring attention over %d rank%s and the single process in %s\n", c,
                c > 1 ? "s" : "", bad.c_str());
  }
  return ok ? 0 : 1;
}

}  // namespace

int ring_attention_command(const CommandArgs& args, const Runtime& rt) {
  Problem P;
  Dtype dtype = Dtype::f64;
  std::optional<double> rtol;
  Flags flags("shardlab ring-attention",
              "Ring attention over the ranks (context parallelism, claim C24) against flash attention on the whole "
              "sequence: output, log-sum-exp, dQ, dK, dV (run under mpirun -np c).");
  flags.choice("--split", P.split, kContextSplitWords, "which tokens each rank holds");
  flags.add("--seq", P.T,
            "sequence length T; 0: 640·c, so that every zigzag chunk holds 320 tokens, more than one of flash's "
            "256-key tiles",
            0, 1 << 20);
  flags.add("--heads", P.NH, "attention heads", 1, 64);
  flags.add("--head-dim", P.HD, "head size", 1, 1024);
  flags.add("--batch", P.B, "samples", 1, 1024);
  flags.choice("--dtype", dtype, kDtypeWords, "element type");
  flags.add("--dropout", P.dropout, "attention dropout probability, in [0, 1)");
  flags.add("--logit-scale", P.logit_scale, "multiply Q by this (> 0): large scores, where e^score overflows");
  flags.add("--rtol", rtol, "tolerance relative to each tensor's largest element (default 1e-12 f64, 1e-5 f32)");
  flags.add("--seed", P.seed, "random seed: Q, K, V, dO and the dropout masks");
  if (int rc = parse_command(flags, args, rt, "shardlab ring-attention"); rc >= 0) return rc;
  const int c = rt.size();
  if (P.T == 0) P.T = 640 * c;
  const int pieces = P.split == ContextSplit::zigzag && c > 1 ? 2 * c : c;
  if (P.T % pieces != 0)
    throw std::invalid_argument("--seq " + std::to_string(P.T) + " is cut into " + std::to_string(pieces) +
                                (pieces == 2 * c ? " zigzag chunks" : " chunks") + " over " + std::to_string(c) +
                                (c > 1 ? " ranks" : " rank") + ": it must be divisible by " + std::to_string(pieces));
  if (!(P.dropout >= 0 && P.dropout < 1)) throw std::invalid_argument("--dropout must be in [0, 1)");
  if (!(P.logit_scale > 0)) throw std::invalid_argument("--logit-scale must be greater than 0");
  P.rtol = rtol.value_or(dtype == Dtype::f32 ? 1e-5 : 1e-12);
  if (!(P.rtol >= 0)) throw std::invalid_argument("--rtol must be at least 0");
  // What every rank allocates: the whole problem (qkv, d_qkv, out, dO, lse) and its own rows of it, twice over
  // for the ring's buffers — against what the machine has (the ranks share it).
  const double elem = dtype == Dtype::f32 ? 4 : 8, n = double(P.B) * P.T * P.C();
  const double per_rank = elem * (8 * n + double(P.B) * P.NH * P.T) * (1 + 2.0 / c);
  const double available = available_memory_bytes();
  if (available > 0 && per_rank * c > available)
    throw std::invalid_argument("this problem on " + std::to_string(c) + (c > 1 ? " ranks" : " rank") + " needs " +
                                format_bytes(per_rank * c) + ", but " + format_bytes(available) +
                                " is available; give a smaller --seq, --batch, --heads or --head-dim");
  CommLedger ledger;
  Communicator world = Communicator::world(&ledger, nullptr, {});
  Communicator cp = world.split(0, world.rank(), Axis::cp);
  return dtype == Dtype::f32 ? check<float>(world, cp, P, "f32") : check<double>(world, cp, P, "f64");
}

}  // namespace shardlab
