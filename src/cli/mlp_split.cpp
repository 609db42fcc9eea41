// `shardlab mlp-split [--hidden C --tokens N --dtype f64|f32 --seed S]` under mpirun -np t: one MLP
// (claim C17), Z = GELU(X·Aᵀ + a)·Bᵀ + b with A = mlp.fc (4C, C) and B = mlp.proj (C, 4C), computed whole on
// every rank and split over the t ranks Megatron's way — A by rows (column-parallel: GELU(X·A_iᵀ + a_i) needs
// no communication), B by columns (row-parallel: partial sums, summed by g's all-reduce), and backward through
// f's all-reduce of dX — with the trainer's own pieces: the weights of a one-layer GPT's initialisation, the
// slices its tensor-parallel layout generates (model/param_layout.h), and the seams of
// parallel/tensor_parallel.h. Prints outputs and gradients side by side, the largest differences over every
// element of every rank (relative to each tensor's largest element), and the all-reduces the comm ledger counted
// against 2(t−1)/t·N·C; exits 1 unless they agree (1e-12 relative in f64, 1e-5 in f32) and the counts are exact.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <vector>

#include "cli/command.h"
#include "comm/communicator.h"
#include "core/ledger.h"
#include "core/rng.h"
#include "model/gelu.h"
#include "model/linear.h"
#include "model/param_layout.h"
#include "optim/recipe.h"
#include "parallel/tensor_parallel.h"
#include "report/format.h"
#include "train/memory_check.h"

namespace shardlab {

namespace {

// The largest difference over a tensor, relative to its largest element.
struct Diff {
  double diff = 0, scale = 0;
  void add(double split, double whole) {
    diff = std::max(diff, std::fabs(split - whole));
    scale = std::max(scale, std::fabs(whole));
  }
  double value() const { return scale > 0 ? diff / scale : diff; }
};

// The first element of `got` farther than tol × (the largest |want|) from `want`, or -1.
template <class T>
int64_t first_past(const std::vector<T>& got, const std::vector<T>& want, double tol) {
  double scale = 0;
  for (T w : want) scale = std::max(scale, std::fabs(double(w)));
  for (size_t i = 0; i < got.size(); ++i)
    if (std::fabs(double(got[i]) - double(want[i])) > tol * (scale > 0 ? scale : 1)) return int64_t(i);
  return -1;
}

template <class T>
int split(Communicator& world, Communicator& tp, CommLedger& ledger, int C, int N, uint64_t seed, const char* dtype) {
  const int t = tp.size(), r = tp.rank(), F4 = 4 * C, F = F4 / t;
  GPTConfig cfg;
  cfg.layers = 1;
  cfg.hidden = C;
  cfg.heads = t;
  cfg.seq = 1;
  cfg.vocab = 2;
  const ParamLayout whole(cfg), mine(cfg, ModelSlice{t, r, false});
  std::vector<T> W(whole.total()), P(mine.total());
  init_params(whole, cfg, seed, W.data(), 0, W.size());
  init_params(mine, cfg, seed, P.data(), 0, P.size());
  const BlockOffsets &w = whole.blocks[0], &p = mine.blocks[0];
  const T *A = &W[w.fc_w], *a = &W[w.fc_b], *B = &W[w.fcproj_w], *b = &W[w.fcproj_b];
  const T *Ai = &P[p.fc_w], *ai = &P[p.fc_b], *Bi = &P[p.fcproj_w];
  const size_t NC = size_t(N) * C;
  std::vector<T> X(NC), dZ(NC);
  const RngStream xs = rng_stream(seed, "mlp-split:x"), ds = rng_stream(seed, "mlp-split:dz");
  for (size_t i = 0; i < NC; ++i) X[i] = T(xs.normal(i)), dZ[i] = T(ds.normal(i));

  // Unsharded, on every rank.
  std::vector<T> pre(size_t(N) * F4), Y(pre.size()), Z(NC), dY(pre.size()), dpre(pre.size()), dX(NC);
  std::vector<T> dA(size_t(F4) * C), da(F4), dB(size_t(C) * F4), db(C);
  linear_forward(pre.data(), X.data(), A, a, N, C, F4);
  gelu_forward(Y.data(), pre.data(), pre.size());
  linear_forward(Z.data(), Y.data(), B, b, N, F4, C);
  linear_backward(dY.data(), dB.data(), db.data(), dZ.data(), Y.data(), B, N, F4, C);
  gelu_backward(dpre.data(), dY.data(), pre.data(), pre.size());
  linear_backward(dX.data(), dA.data(), da.data(), dpre.data(), X.data(), A, N, C, F4);

  // Split: rank r's rows of A and a, columns of B; the seams do the communication.
  MemoryLedger mem;
  TensorParallelRegions<T> regions(tp, false, size_t(N), C, mem);
  BlockDims d;
  d.B = 1, d.T = N, d.T_ctx = N, d.T_local = N, d.C = C;  // no context parallelism: all N rows
  const uint64_t seq0 = ledger.next_seq();
  std::vector<T> pre_i(size_t(N) * F), Y_i(pre_i.size()), Zs(NC), dY_i(pre_i.size()), dpre_i(pre_i.size()), dXs(NC);
  std::vector<T> dA_i(size_t(F) * C), da_i(F), dB_i(size_t(C) * F), db_s(C);
  const T* x = regions.enter(X.data(), nullptr, d);  // f forward: identity (copy_to_tp_region)
  linear_forward(pre_i.data(), x, Ai, ai, N, C, F);
  gelu_forward(Y_i.data(), pre_i.data(), pre_i.size());
  linear_forward(Zs.data(), Y_i.data(), Bi, static_cast<const T*>(nullptr), N, F, C);  // this rank's partial sums
  regions.leave(Zs.data(), Zs.data(), d);                                              // g forward: all-reduce
  for (int i = 0; i < N; ++i)
    for (int c = 0; c < C; ++c) Zs[size_t(i) * C + c] += b[c];  // the bias once, after the sum
  const T* dz = regions.leave_backward(dZ.data(), nullptr, d);  // g backward: identity
  linear_backward(dY_i.data(), dB_i.data(), db_s.data(), dz, Y_i.data(), Bi, N, F, C);
  gelu_backward(dpre_i.data(), dY_i.data(), pre_i.data(), pre_i.size());
  linear_backward(dXs.data(), dA_i.data(), da_i.data(), dpre_i.data(), X.data(), Ai, N, C, F);
  regions.enter_backward(dXs.data(), d);  // f backward: all-reduce
  const CommCall calls = ledger.total_since(seq0, "all_reduce");

  // Every element against the unsharded one: slices by rows (A, a, dA, da) and columns (B, dB).
  Diff wts, z, dx, dA_, da_, dB_, db_;
  for (size_t i = 0; i < NC; ++i) z.add(Zs[i], Z[i]), dx.add(dXs[i], dX[i]);
  for (int j = 0; j < F; ++j) {
    const int g = r * F + j;
    da_.add(da_i[j], da[g]);
    wts.add(ai[j], a[g]);
    for (int c = 0; c < C; ++c) {
      wts.add(Ai[size_t(j) * C + c], A[size_t(g) * C + c]);
      wts.add(Bi[size_t(c) * F + j], B[size_t(c) * F4 + g]);
      dA_.add(dA_i[size_t(j) * C + c], dA[size_t(g) * C + c]);
      dB_.add(dB_i[size_t(c) * F + j], dB[size_t(c) * F4 + g]);
    }
  }
  for (int c = 0; c < C; ++c) db_.add(db_s[c], db[c]);
  auto worst = [&](double v) {
    double m = 0;
    for (double x : world.all_gather_value(v)) m = std::max(m, x);
    return m;
  };
  const double diffs[] = {worst(wts.diff),    worst(z.value()),   worst(dx.value()), worst(dA_.value()),
                          worst(da_.value()), worst(dB_.value()), worst(db_.value())};
  // g forward and f backward: two all-reduces of N·C elements, each sending 2·(N·C − one chunk) (claim C8);
  // on one rank there is nothing to reduce, so none.
  const std::vector<size_t> chunks = tp.even_counts(NC);
  const uint64_t expect = 2 * 2 * (NC - chunks[r]) * sizeof(T), expect_calls = t > 1 ? 2 : 0;
  const bool counted = worst(calls.seq != expect_calls || calls.sent() != expect ? 1.0 : 0.0) == 0;
  const double tol = sizeof(T) == 8 ? 1e-12 : 1e-5;
  const bool equal = std::all_of(std::begin(diffs) + 1, std::end(diffs), [&](double v) { return v <= tol; });
  // Where Z and dX first differ on each rank (index, unsharded, split): what a student can act on.
  const int64_t zi = first_past(Zs, Z, tol), xi = first_past(dXs, dX, tol);
  const std::vector<int64_t> z_at = world.all_gather_value(zi), x_at = world.all_gather_value(xi);
  const std::vector<double> z_want = world.all_gather_value(zi < 0 ? 0.0 : double(Z[zi])),
                            z_got = world.all_gather_value(zi < 0 ? 0.0 : double(Zs[zi])),
                            x_want = world.all_gather_value(xi < 0 ? 0.0 : double(dX[xi])),
                            x_got = world.all_gather_value(xi < 0 ? 0.0 : double(dXs[xi]));
  if (world.rank() != 0) return equal && counted && diffs[0] == 0 ? 0 : 1;

  std::printf(
      "MLP split over t = %d rank%s (claim C17): Z = GELU(X·Aᵀ + a)·Bᵀ + b, X (%d, %d), A = mlp.fc (%d, %d), "
      "B = mlp.proj (%d, %d), %s\n",
      t, t > 1 ? "s" : "", N, C, F4, C, C, F4, dtype);
  std::printf(
      "  rank r holds rows [r·%d, (r+1)·%d) of A and a (column-parallel) and the same columns of B (row-parallel)\n", F,
      F);
  std::printf("  weights: each rank's slices, generated by its tensor-parallel layout, equal the whole model's: %s\n",
              diffs[0] == 0 ? "yes, every element" : "NO");
  std::printf("\n  %-22s %24s %24s\n", "element (rank 0)", "unsharded", "split");
  auto show = [](const char* name, double u, double s) { std::printf("  %-22s %24.17g %24.17g\n", name, u, s); };
  show("Z[0][0]", Z[0], Zs[0]);
  show("Z[N-1][C-1]", Z[NC - 1], Zs[NC - 1]);
  show("dX[0][0] (f's sum)", dX[0], dXs[0]);
  show("dX[N-1][C-1]", dX[NC - 1], dXs[NC - 1]);
  show("dA[0][0] (its row)", dA[0], dA_i[0]);
  show("dB[0][0] (its column)", dB[0], dB_i[0]);
  show("db[0] (replicated)", db[0], db_s[0]);
  std::printf(
      "\n  largest difference over every element of every rank, relative to the tensor's largest element:\n"
      "    Z %.2g   dX %.2g   dA %.2g   da %.2g   dB %.2g   db %.2g   (tolerance %.0e)\n",
      diffs[1], diffs[2], diffs[3], diffs[4], diffs[5], diffs[6], tol);
  std::printf(
      "  communication (comm ledger, rank 0): %llu all-reduces on tp — g in forward, f in backward — sending "
      "%llu B; 2 × 2(t−1)/t · N·C · %zu B = %llu B: %s\n",
      static_cast<unsigned long long>(calls.seq), static_cast<unsigned long long>(calls.sent()), sizeof(T),
      static_cast<unsigned long long>(expect), counted ? "exact on every rank" : "MISMATCH");
  for (int q = 0; q < world.size(); ++q) {
    if (z_at[q] >= 0)
      std::printf("  rank %d: Z[%lld][%lld] is the first element past the tolerance: unsharded %.17g, split %.17g\n", q,
                  (long long)(z_at[q] / C), (long long)(z_at[q] % C), z_want[q], z_got[q]);
    if (x_at[q] >= 0)
      std::printf("  rank %d: dX[%lld][%lld] is the first element past the tolerance: unsharded %.17g, split %.17g\n",
                  q, (long long)(x_at[q] / C), (long long)(x_at[q] % C), x_want[q], x_got[q]);
  }
  const bool ok = equal && counted && diffs[0] == 0;
  std::printf("result: %s\n", ok ? "the split MLP computes the unsharded one's outputs and gradients"
                                 : "MISMATCH between the split and the unsharded MLP");
  return ok ? 0 : 1;
}

}  // namespace

int mlp_split_command(const CommandArgs& args, const Runtime& rt) {
  int C = 64, N = 8;
  uint64_t seed = 1234;
  Dtype dtype = Dtype::f64;
  Flags flags("shardlab mlp-split",
              "One MLP split over the ranks Megatron's way (column- then row-parallel), beside the unsharded one "
              "(run under mpirun -np t).");
  flags.add("--hidden", C, "hidden size C (the MLP is C → 4C → C)", 1, 4096);
  flags.add("--tokens", N, "rows of the input X", 1, 65536);
  flags.choice("--dtype", dtype, kDtypeWords, "element type");
  flags.add("--seed", seed, "random seed: weights (the model's initialisation), X and dZ");
  if (int rc = parse_command(flags, args, rt, "shardlab mlp-split"); rc >= 0) return rc;
  if (C % rt.size() != 0)
    throw std::invalid_argument("--hidden " + std::to_string(C) + " is not divisible by the " +
                                std::to_string(rt.size()) + " ranks (each holds hidden/t heads' worth of the MLP)");
  // What every rank allocates — the whole MLP's weights, activations and gradients, and its slice of each —
  // against what the machine has (the ranks share it).
  const double t = rt.size(), c = C, n = N, elem = dtype == Dtype::f32 ? 4 : 8;
  const double per_rank = elem * ((20 * c * c + 16 * n * c) * (1 + 1 / t) + 6 * n * c);
  const double available = available_memory_bytes();
  if (available > 0 && per_rank * t > available)
    throw std::invalid_argument("--hidden " + std::to_string(C) + " --tokens " + std::to_string(N) + " on " +
                                std::to_string(rt.size()) + " ranks needs " + format_bytes(per_rank * t) + ", but " +
                                format_bytes(available) + " is available; give a smaller --hidden or --tokens");
  CommLedger ledger;
  Communicator world = Communicator::world(&ledger, nullptr, {});
  Communicator tp = world.split(0, world.rank(), Axis::tp);
  return dtype == Dtype::f32 ? split<float>(world, tp, ledger, C, N, seed, "f32")
                             : split<double>(world, tp, ledger, C, N, seed, "f64");
}

}  // namespace shardlab
