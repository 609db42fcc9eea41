// The mixture-of-experts layer (model/moe.h, model/moe_routing.h, claim C25) on its own, in f64:
//  - forward against a direct per-token loop (each token's k experts' MLPs on its own row, weighted by the
//    renormalised gates), dropless and with a capacity that drops slots;
//  - routing rules: ties go to the lower expert index; capacity keeps each expert's first slots by token
//    position and counts the rest; the gates of a token sum to 1; the load-balancing loss and the z-loss
//    against their formulas written out;
//  - backward against central finite differences of L = Σ r ⊙ out + α·aux + β·z for every input and weight
//    (router, gates through the renormalisation, experts, both losses), away from top-k ties.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/rng.h"
#include "model/moe.h"

using namespace shardlab;

namespace {

using Vec = std::vector<double>;

Vec randn(size_t n, uint64_t tag, double scale = 1.0) {
  const RngStream r = rng_stream(77, "test:moe", tag);
  Vec v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * r.normal(i);
  return v;
}

MemoryLedger test_ledger;
ExpertExchange<double> in_place;

struct Case {
  MoeDims d;
  int F;
  Vec x, wr, w1, b1, w2, b2;
  Case(int R, int C, int E, int F_, int k, int capacity, int group = 0) : d{R, C, E, k, capacity, group}, F(F_) {
    x = randn(size_t(R) * C, 1);
    wr = randn(size_t(E) * C, 2);
    w1 = randn(size_t(E) * F * C, 3, 0.5);
    b1 = randn(size_t(E) * F, 4, 0.1);
    w2 = randn(size_t(E) * C * F, 5, 0.5);
    b2 = randn(size_t(E) * C, 6, 0.1);
  }
  MoeWeights<const double*> weights() const { return {wr.data(), w1.data(), b1.data(), w2.data(), b2.data()}; }
  MoeShape shape() const { return MoeShape{d, F, 0, d.E, {}}; }
  Vec forward(MoeRecord<double>& rec) const {
    Vec out(size_t(d.R) * d.C);
    moe_forward(out.data(), rec, x.data(), weights(), shape(), in_place, test_ledger);
    return out;
  }
};

// One expert's MLP on one row, written out.
Vec expert_mlp(const Case& c, int e, const double* row) {
  const int C = c.d.C, F = c.F;
  Vec h(F), y(C);
  for (int f = 0; f < F; ++f) {
    double s = c.b1[size_t(e) * F + f];
    for (int i = 0; i < C; ++i) s += c.w1[(size_t(e) * F + f) * C + i] * row[i];
    h[f] = 0.5 * s * (1 + std::tanh(0.7978845608028654 * (s + 0.044715 * s * s * s)));
  }
  for (int o = 0; o < C; ++o) {
    double s = c.b2[size_t(e) * C + o];
    for (int f = 0; f < F; ++f) s += c.w2[(size_t(e) * C + o) * F + f] * h[f];
    y[o] = s;
  }
  return y;
}

}  // namespace

TEST_CASE("moe forward equals each token's k experts weighted by its renormalised gates", "[moe]") {
  for (int capacity : {0, 3}) {
    const Case c(9, 6, 4, 5, 2, capacity);
    MoeRecord<double> rec;
    const Vec out = c.forward(rec);
    const MoeRouting<double>& r = rec.routing;
    INFO("capacity " << capacity);
    Vec want(out.size(), 0.0);
    for (int t = 0; t < c.d.R; ++t) {
      double gsum = 0;
      for (int j = 0; j < c.d.k; ++j) {
        const int s = t * c.d.k + j;
        gsum += r.gate[s];
        if (r.row()[s] < 0) continue;
        const Vec y = expert_mlp(c, r.expert()[s], c.x.data() + size_t(t) * c.d.C);
        for (int o = 0; o < c.d.C; ++o) want[size_t(t) * c.d.C + o] += r.gate[s] * y[o];
      }
      CHECK(std::fabs(gsum - 1.0) < 1e-15);
      // The chosen experts are the k most probable, in order.
      const double* p = r.probs.data() + size_t(t) * c.d.E;
      for (int j = 0; j + 1 < c.d.k; ++j)
        CHECK(p[r.expert()[size_t(t) * c.d.k + j]] >= p[r.expert()[size_t(t) * c.d.k + j + 1]]);
    }
    double worst = 0;
    for (size_t i = 0; i < out.size(); ++i) worst = std::max(worst, std::fabs(out[i] - want[i]));
    CHECK(worst < 1e-13);
    // Capacity: each expert keeps its first `capacity` slots by position, and the drops are counted.
    int dropped = 0;
    for (int e = 0; e < c.d.E; ++e) {
      int seen = 0;
      for (int s = 0; s < c.d.R * c.d.k; ++s) {
        if (r.expert()[s] != e) continue;
        const bool keep = capacity == 0 || seen < capacity;
        CHECK((r.row()[s] >= 0) == keep);
        dropped += !keep;
        ++seen;
      }
      CHECK(r.routed(0)[e] == seen);
    }
    CHECK(r.dropped == dropped);
    if (capacity == 3) CHECK(dropped > 0);  // 18 slots over 4 experts: some expert gets more than 3
    // The losses, written out.
    double aux = 0, z = 0;
    for (int i = 0; i < c.d.E; ++i) {
      double P = 0;
      for (int t = 0; t < c.d.R; ++t) P += r.probs[size_t(t) * c.d.E + i] / c.d.R;
      aux += double(r.routed(0)[i]) / (c.d.R * c.d.k) * P;
    }
    for (int t = 0; t < c.d.R; ++t) z += r.lse[t] * r.lse[t];
    CHECK(std::fabs(r.aux - c.d.E * aux) < 1e-14);
    CHECK(std::fabs(r.z - z) < 1e-13);
  }
}

TEST_CASE("moe routing breaks ties by the lower expert index", "[moe]") {
  Case c(3, 4, 4, 3, 2, 0);
  for (int i = 0; i < c.d.C; ++i) c.wr[size_t(2) * c.d.C + i] = c.wr[size_t(1) * c.d.C + i];  // experts 1 and 2 alike
  for (int i = 0; i < c.d.C; ++i) c.wr[size_t(3) * c.d.C + i] = c.wr[size_t(1) * c.d.C + i];  // and 3
  for (int i = 0; i < c.d.C; ++i) c.wr[i] = -10.0 * std::fabs(c.wr[size_t(1) * c.d.C + i]) - 1.0;
  for (double& v : c.x) v = std::fabs(v);  // expert 0 the least likely for every token
  MoeRecord<double> rec;
  c.forward(rec);
  for (int t = 0; t < c.d.R; ++t) {
    INFO("token " << t);
    CHECK(rec.routing.expert()[size_t(t) * 2] == 1);
    CHECK(rec.routing.expert()[size_t(t) * 2 + 1] == 2);
  }
}

TEST_CASE("moe backward matches finite differences: router, gates, experts and both losses", "[moe][grad]") {
  const double alpha = 0.7, beta = 0.3, h = 1e-5;
  for (auto [capacity, group] : {std::pair{0, 0}, {3, 0}, {2, 3}}) {
    Case c(9, 6, 4, 5, 2, capacity, group);
    const Vec r = randn(size_t(c.d.R) * c.d.C, 9);
    auto objective = [&](const Case& cc) {
      MoeRecord<double> rec;
      const Vec out = cc.forward(rec);
      double L = alpha * rec.routing.aux + beta * rec.routing.z;
      for (size_t i = 0; i < out.size(); ++i) L += r[i] * out[i];
      return L;
    };
    MoeRecord<double> rec;
    c.forward(rec);
    // Away from ties: the k-th and (k+1)-th probabilities of every token apart by more than the step can move them.
    for (int t = 0; t < c.d.R; ++t) {
      std::vector<double> p(rec.routing.probs.data() + size_t(t) * c.d.E,
                            rec.routing.probs.data() + size_t(t + 1) * c.d.E);
      std::sort(p.rbegin(), p.rend());
      REQUIRE(p[c.d.k - 1] - p[c.d.k] > 1e-3);
    }
    Vec d_x(c.x.size()), gwr(c.wr.size()), gw1(c.w1.size()), gb1(c.b1.size()), gw2(c.w2.size()), gb2(c.b2.size());
    moe_backward(d_x.data(), MoeWeights<double*>{gwr.data(), gw1.data(), gb1.data(), gw2.data(), gb2.data()}, r.data(),
                 rec, c.x.data(), c.weights(), c.shape(), alpha, beta, in_place, test_ledger);
    struct Param {
      const char* name;
      Vec Case::*field;
      const Vec& grad;
    } params[] = {{"x", &Case::x, d_x},   {"router", &Case::wr, gwr}, {"W1", &Case::w1, gw1},
                  {"b1", &Case::b1, gb1}, {"W2", &Case::w2, gw2},     {"b2", &Case::b2, gb2}};
    for (const Param& p : params) {
      Vec fd((c.*p.field).size());
      for (size_t i = 0; i < fd.size(); ++i) {
        Case plus = c, minus = c;
        (plus.*p.field)[i] += h;
        (minus.*p.field)[i] -= h;
        fd[i] = (objective(plus) - objective(minus)) / (2 * h);
      }
      double num = 0, na = 0, nb = 0;
      for (size_t i = 0; i < fd.size(); ++i) {
        num += (fd[i] - p.grad[i]) * (fd[i] - p.grad[i]);
        na += fd[i] * fd[i];
        nb += p.grad[i] * p.grad[i];
      }
      const double rel = std::sqrt(num) / std::max(std::sqrt(na), std::sqrt(nb));
      INFO("capacity " << capacity << ", groups of " << group << " rows, gradient of " << p.name
                       << ": ||g − fd|| / max = " << rel);
      CHECK(rel < 1e-6);
    }
  }
}

TEST_CASE("moe routing groups: each group routes, drops and balances as if it were routed alone", "[moe]") {
  const int R = 12, C = 5, E = 4, F = 3, k = 2, rows = 4, capacity = 2;
  const Case all(R, C, E, F, k, capacity, rows);
  MoeRecord<double> rec;
  const Vec out = all.forward(rec);
  double aux = 0, z = 0;
  int dropped = 0;
  for (int g = 0; g < R / rows; ++g) {
    INFO("group " << g);
    Case one(rows, C, E, F, k, capacity);
    one.wr = all.wr, one.w1 = all.w1, one.b1 = all.b1, one.w2 = all.w2, one.b2 = all.b2;
    one.x.assign(all.x.begin() + size_t(g) * rows * C, all.x.begin() + size_t(g + 1) * rows * C);
    MoeRecord<double> alone;
    const Vec part = one.forward(alone);
    for (size_t i = 0; i < part.size(); ++i) CHECK(part[i] == out[size_t(g) * rows * C + i]);
    for (int e = 0; e < E; ++e) CHECK(rec.routing.routed(g)[e] == alone.routing.routed(0)[e]);
    aux += alone.routing.aux, z += alone.routing.z, dropped += alone.routing.dropped;
  }
  CHECK(dropped > 0);
  CHECK(rec.routing.dropped == dropped);
  CHECK(std::fabs(rec.routing.aux - aux) < 1e-14);
  CHECK(std::fabs(rec.routing.z - z) < 1e-12);
}
