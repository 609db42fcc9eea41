// `shardlab moe-layer [--experts E --top-k k --hidden C --ffn F --rows R --group G --capacity X --aux-loss A
// --z-loss Z --seed S --rtol R --dtype f64|f32]` under mpirun -np e: one mixture-of-experts layer (claim C25) alone,
// its experts spread over the ranks as expert parallelism spreads them, against one process. x, the router's and
// the experts' weights and d_out are drawn from the counter-based RNG by GLOBAL index, so every rank knows the whole
// problem. Rank r takes rows [r·R, (r+1)·R) (its own samples) and experts [r·E/e, (r+1)·E/e), routes its rows and
// runs moe_forward/moe_backward through the trainer's ExpertParallel (all-to-alls on the ep axis, the rows laid out
// by model/moe_dispatch.cpp); every rank also runs the whole layer on one process, and checks that one process
// against a plain loop over tokens and slots (model/moe_plain.h: no dispatch, no regrouping), so that a dispatch
// that is wrong the same way on one process and on e is caught too. Prints the layer, the router's choices for a
// few tokens, the rows each expert received from each source rank beside what one process's routing says, whether
// each expert computed on its tokens' rows (source by source, each source's in token order), the bytes of each
// all-to-all from the comm ledger beside rows·C·bytes, and one verdict per tensor (output, d_x, the router's and
// the experts' weight gradients — the router's summed over the ranks) with, for a failing one, the first element
// past the tolerance. Exits 0 only if everything agrees.
// Leaves out: tensor and data parallelism around the layer (the trainer's tests cover them) and timing.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/moe_layer_report.h"
#include "comm/communicator.h"
#include "core/ledger.h"
#include "core/rng.h"
#include "model/moe.h"
#include "model/moe_plain.h"
#include "optim/recipe.h"
#include "parallel/expert_parallel.h"
#include "report/format.h"
#include "train/memory_check.h"

namespace shardlab {

namespace {

// All E experts' (or one rank's El) weights or gradients, and the router's.
template <class T>
struct Tensors {
  std::vector<T> wr, w1, b1, w2, b2;
  Tensors(int E, int El, int C, int F)
      : wr(size_t(E) * C), w1(size_t(El) * F * C), b1(size_t(El) * F), w2(size_t(El) * C * F), b2(size_t(El) * C) {}
  const std::vector<T>& part(int x) const {  // tensors 2..6 of MoeLayerReport
    const std::vector<T>* all[] = {&wr, &w1, &b1, &w2, &b2};
    return *all[x - 2];
  }
  // Experts [first, first + El) of these (all E of them: first = 0).
  MoeWeights<const T*> from(int first, int C, int F) const {
    return {wr.data(), w1.data() + size_t(first) * F * C, b1.data() + size_t(first) * F,
            w2.data() + size_t(first) * C * F, b2.data() + size_t(first) * C};
  }
  MoeWeights<T*> grads() { return {wr.data(), w1.data(), b1.data(), w2.data(), b2.data()}; }
};

template <class T>
void draw(std::vector<T>& v, uint64_t seed, const char* what, double scale) {
  const RngStream s = rng_stream(seed, what);
  for (size_t i = 0; i < v.size(); ++i) v[i] = T(s.normal(i) * scale);
}

template <class T>
double largest(const std::vector<T>& v) {
  double m = 0;
  for (T x : v) m = std::max(m, std::fabs(double(x)));
  return m > 0 ? m : 1;
}

// got[i] against want[i], i < n; `at`: the global index of got[0] in the whole tensor.
template <class T>
void compare(TensorCheck& t, const T* got, const T* want, size_t n, double scale, double tol, size_t at) {
  for (size_t i = 0; i < n; ++i) t.add(double(got[i]), double(want[i]), scale, tol, at + i);
}

template <class T>
int check(Communicator& world, Communicator& ep, CommLedger& comm, const MoeProblem& P) {
  const int e = ep.size(), r = ep.rank(), E = P.E, k = P.k, C = P.C, F = P.F, R = P.R, N = e * R, El = E / e;
  const int first = r * El, cap = P.capacity_slots();
  MemoryLedger mem;

  // The whole problem, on every rank.
  Tensors<T> w(E, E, C, F);
  std::vector<T> x(size_t(N) * C), dout(size_t(N) * C);
  draw(x, P.seed, "moe-layer:x", 1), draw(dout, P.seed, "moe-layer:dout", 1);
  draw(w.wr, P.seed, "moe-layer:router", 1), draw(w.w1, P.seed, "moe-layer:fc.weight", 1 / std::sqrt(double(C)));
  draw(w.b1, P.seed, "moe-layer:fc.bias", 0.1), draw(w.w2, P.seed, "moe-layer:proj.weight", 1 / std::sqrt(double(F)));
  draw(w.b2, P.seed, "moe-layer:proj.bias", 0.1);
  const T aux = T(P.aux), z = T(P.z);

  // One process: moe_forward/moe_backward on all N rows, every expert here; and the plain loop over tokens.
  const MoeShape whole{MoeDims{N, C, E, k, cap, P.G}, F, 0, E, {}};
  ExpertExchange<T> here;
  MoeRecord<T> one;
  std::vector<T> out1(x.size()), dx1(x.size()), out0(x.size()), dx0(x.size());
  Tensors<T> g1(E, E, C, F), g0(E, E, C, F);
  moe_forward(out1.data(), one, x.data(), w.from(0, C, F), whole, here, mem);
  moe_backward(dx1.data(), g1.grads(), dout.data(), one, x.data(), w.from(0, C, F), whole, aux, z, here, mem);
  const MoeRouting<T>& routing = one.routing;
  moe_plain_forward(out0.data(), routing, x.data(), w.from(0, C, F), C, F);
  moe_plain_backward(dx0.data(), g0.grads(), dout.data(), routing, x.data(), w.from(0, C, F), whole.d, F, aux, z);

  // This rank: its rows, its experts, the all-to-alls.
  ExpertParallel<T> exchange(ep, nullptr, mem);
  const MoeShape mine{MoeDims{R, C, E, k, cap, P.G}, F, first, El, {}};
  const T* xr = x.data() + size_t(r) * R * C;
  MoeRecord<T> rec;
  std::vector<T> out(size_t(R) * C), dx(size_t(R) * C);
  Tensors<T> g(E, El, C, F);
  moe_forward(out.data(), rec, xr, w.from(first, C, F), mine, exchange, mem);

  // The tokens each of my experts received: rows per source rank, and the rows themselves (exact copies of x's).
  MoeRankReport me;
  me.received.resize(size_t(e) * El);
  for (int s = 0; s < e; ++s)
    for (int j = 0; j < El; ++j) me.received[size_t(s) * El + j] = rec.rows.from(s, j);
  me.dropped = rec.routing.dropped;
  const int m = rec.rows.rows();
  auto token_of = [&](const T* row) {  // which token's row this is: ≥ 0, −1 zeros, −2 none
    for (int u = 0; u < N; ++u)
      if (std::equal(row, row + C, x.data() + size_t(u) * C)) return u;
    return std::all_of(row, row + C, [](T v) { return v == T(0); }) ? -1 : -2;
  };
  for (int j = 0, a = 0; j < El; ++j) {
    const int expert_first = a;  // where expert j's rows start on the experts' side
    for (int s = 0; s < e; ++s)
      for (int t = s * R; t < (s + 1) * R; ++t)
        for (int q = 0; q < k; ++q) {
          const int slot = t * k + q;
          if (routing.expert()[slot] != first + j || routing.row()[slot] < 0) continue;
          const T* got = rec.expert_in.data() + size_t(a) * C;
          if (a < m && !me.bad_row.found && !std::equal(got, got + C, x.data() + size_t(t) * C))
            me.bad_row.found = 1, me.bad_row.expert = first + j, me.bad_row.row = a - expert_first,
            me.bad_row.source = s, me.bad_row.want = t, me.bad_row.got = token_of(got);
          ++a;
        }
  }

  moe_backward(dx.data(), g.grads(), dout.data() + size_t(r) * R * C, rec, xr, w.from(first, C, F), mine, aux, z,
               exchange, mem);

  // The comm ledger's all-to-alls on the ep axis, by purpose.
  for (const CommCall& c : comm.calls()) {
    if (c.axis != Axis::ep) continue;
    for (int p = 0; p < 3; ++p)
      if (c.purpose == kMoePurposes[p]) me.calls[p] += 1, me.sent[p] += c.sent(), me.recv[p] += c.recv();
  }

  // Every tensor: this rank's part against one process's.
  const size_t rows_at = size_t(r) * R * C;
  const std::vector<T>* ones[] = {&out1, &dx1};
  const T* mine_rows[] = {out.data(), dx.data()};
  for (int t = 0; t < 2; ++t)
    compare(me.vs_one[t], mine_rows[t], ones[t]->data() + rows_at, size_t(R) * C, largest(*ones[t]), P.rtol, rows_at);
  const std::vector<T> parts = world.all_gather_values(g.wr);  // the router's gradient: summed over the ranks
  std::vector<T> router(g.wr.size(), T(0));
  for (int q = 0; q < e; ++q)
    for (size_t i = 0; i < router.size(); ++i) router[i] += parts[q * router.size() + i];
  compare(me.vs_one[2], router.data(), g1.wr.data(), router.size(), largest(g1.wr), P.rtol, 0);
  for (int t = 3; t < kMoeTensors; ++t) {
    const size_t per = g1.part(t).size() / E;
    compare(me.vs_one[t], g.part(t).data(), g1.part(t).data() + first * per, El * per, largest(g1.part(t)), P.rtol,
            first * per);
  }
  // One process against the plain loop: the same on every rank.
  MoeReport rep;
  const std::vector<T>* plain[] = {&out0, &dx0};
  for (int t = 0; t < 2; ++t)
    compare(rep.one_vs_plain[t], ones[t]->data(), plain[t]->data(), ones[t]->size(), largest(*ones[t]), P.rtol, 0);
  for (int t = 2; t < kMoeTensors; ++t)
    compare(rep.one_vs_plain[t], g1.part(t).data(), g0.part(t).data(), g1.part(t).size(), largest(g1.part(t)), P.rtol,
            0);

  // What one process's routing says: each expert's rows from each source rank, the rows each rank sends to
  // other ranks' experts and receives from them, the slots dropped.
  rep.expected.assign(size_t(E) * e, 0);
  rep.rows_out.assign(e, 0), rep.rows_in.assign(e, 0);
  for (int t = 0; t < N; ++t)
    for (int q = 0; q < k; ++q) {
      const int slot = t * k + q, ex = routing.expert()[slot], src = t / R, dst = ex / El;
      if (routing.row()[slot] < 0) continue;
      rep.expected[size_t(ex) * e + src] += 1;
      if (src != dst) rep.rows_out[src] += 1, rep.rows_in[dst] += 1;
    }
  rep.dropped = routing.dropped;
  for (int q = 0; q < std::min(e, 4); ++q)  // each rank's first two tokens (of the first 4 ranks)
    for (int t = q * R; t < q * R + std::min(R, 2); ++t) {
      MoeReport::Token tok{t, {}, {}, {}};
      for (int j = 0; j < k; ++j) {
        tok.expert.push_back(routing.expert()[t * k + j]);
        tok.gate.push_back(double(routing.gate[t * k + j]));
        tok.kept.push_back(routing.row()[t * k + j] >= 0);
      }
      rep.tokens.push_back(tok);
    }

  const std::vector<double> all = world.all_gather_values(me.pack());
  rep.ranks = MoeRankReport::unpack_all(all, e, El);
  return moe_layer_report(P, rep, e, world.rank() == 0, sizeof(T)) ? 0 : 1;
}

}  // namespace

int moe_layer_command(const CommandArgs& args, const Runtime& rt) {
  MoeProblem P;
  Dtype dtype = Dtype::f64;
  std::optional<double> rtol;
  Flags flags("shardlab moe-layer",
              "One mixture-of-experts layer with its experts spread over the ranks (expert parallelism, claim C25) "
              "against one process: the tokens each expert receives, the all-to-alls' bytes, output, d_x and the "
              "weight gradients (run under mpirun -np e).");
  flags.add("--experts", P.E, "experts E (divisible by the ranks: each holds E/e whole experts)", 1, 1024);
  flags.add("--top-k", P.k, "slots per token k (1 ≤ k ≤ E)", 1, 1024);
  flags.add("--hidden", P.C, "hidden size C", 1, 4096);
  flags.add("--ffn", P.F, "each expert's width F", 1, 16384);
  flags.add("--rows", P.R, "token rows per rank (a rank's own samples)", 1, 1 << 20);
  flags.add("--group", P.G, "rows per routing group (one sample's tokens: capacity and the balance loss per group)", 1,
            1 << 20);
  flags.add("--capacity", P.capacity,
            "slots per expert per group as a factor of the even share group·k/E (0: dropless; 1.25 keeps 1.25×)");
  flags.add("--aux-loss", P.aux, "weight of each group's load-balancing loss in the objective");
  flags.add("--z-loss", P.z, "weight of each row's router z-loss (logsumexp²)");
  flags.choice("--dtype", dtype, kDtypeWords, "element type");
  flags.add("--rtol", rtol, "tolerance relative to each tensor's largest element (default 1e-12 f64, 1e-5 f32)");
  flags.add("--seed", P.seed, "random seed: x, the weights and d_out");
  if (int rc = parse_command(flags, args, rt, "shardlab moe-layer"); rc >= 0) return rc;
  const int e = rt.size();
  const std::string ranks = std::to_string(e) + (e > 1 ? " ranks" : " rank");
  if (P.E % e != 0)
    throw std::invalid_argument("--experts " + std::to_string(P.E) + " is not divisible by the " + ranks +
                                " (expert parallelism gives every rank E/e whole experts)");
  if (P.k > P.E)
    throw std::invalid_argument("--top-k " + std::to_string(P.k) + " must be between 1 and --experts " +
                                std::to_string(P.E));
  if (P.R % P.G != 0)
    throw std::invalid_argument("--rows " + std::to_string(P.R) + " (per rank) is not a whole number of routing " +
                                "groups of --group " + std::to_string(P.G));
  if (!(P.capacity >= 0))
    throw std::invalid_argument("--capacity must be ≥ 0 (0: dropless; 1.25 keeps 1.25× an even share)");
  if (!(P.aux >= 0) || !(P.z >= 0)) throw std::invalid_argument("--aux-loss and --z-loss must be ≥ 0");
  P.rtol = rtol.value_or(dtype == Dtype::f32 ? 1e-5 : 1e-12);
  if (!(P.rtol >= 0)) throw std::invalid_argument("--rtol must be at least 0");
  // What every rank allocates: the whole problem three times over (one process, the plain loop, its own part) and
  // the experts' rows — against what the machine has (the ranks share it).
  const double elem = dtype == Dtype::f32 ? 4 : 8, n = double(e) * P.R;
  const double weights = double(P.E) * (2.0 * P.C * P.F + P.F + P.C) + double(P.E) * P.C;
  const double per_rank = elem * (10 * n * P.C + 4 * weights + 6 * n * P.k * (P.C + P.F));
  const double available = available_memory_bytes();
  if (available > 0 && per_rank * e > available)
    throw std::invalid_argument("this layer on " + ranks + " needs " + format_bytes(per_rank * e) + ", but " +
                                format_bytes(available) + " is available; give smaller --rows, --experts or --ffn");
  CommLedger ledger;
  Communicator world = Communicator::world(&ledger, nullptr, {});
  Communicator ep = world.split(0, world.rank(), Axis::ep);
  P.dtype = dtype == Dtype::f32 ? "f32" : "f64";
  return dtype == Dtype::f32 ? check<float>(world, ep, ledger, P) : check<double>(world, ep, ledger, P);
}

}  // namespace shardlab
