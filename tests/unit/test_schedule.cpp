// Pipeline schedules, single process (parallel/schedule.h; claims C20, C21). For every kind and every
// (p, m, v) with p 1…6, m 1…12, v 1…3 where valid (interleaved: p ≥ 2, v ≥ 2 and m a multiple of p; gpipe and 1f1b:
// v = 1):
//  - structure, checked by the test's own code (not through simulate()): on every stage each micro-batch's
//    forward and backward of each chunk occur exactly once, the forward first; a receive comes before the
//    compute that needs it, a send after the compute that produced it; every send has exactly one matching
//    receive on the peer the model chunk order names (activation of model chunk k to chunk k + 1 on stage
//    (k + 1) mod p, its gradient to chunk k − 1 on stage (k − 1) mod p), and no receive is left over;
//    the backwards of each chunk run in micro-batch order (what bit-identity with one process needs), and
//    the last chunk's forwards too (the order in which the loss is summed);
//  - simulate() completes (no deadlock), and its peak stash is m on every GPipe stage, min(p − s, m) on
//    1F1B stage s, and at most Megatron's warmup + 1 = min(2(p − s − 1) + (v − 1)p + 1, m·v) records on an
//    interleaved stage s;
//  - the bubble of simulate(schedule, v, 1, 2) equals bubble_formula() and the chapter's formula written
//    out here, (p − 1)/(m + p − 1) and (p − 1)/(v·m + p − 1), to 1e-12, and the makespan is 3(v·m + p − 1)/v;
//  - broken schedules are reported (complete == false with a problem): a stage whose send is moved after a
//    later receive (a cycle), every single send dropped, every single receive dropped, a backward before
//    its forward, a forward twice, a send repeated, a micro-batch left out of every stage (simulate() counts
//    the micro-batches each stage ran); the test's own matcher flags the dropped messages too;
//    make_schedule refuses (p, m, v) no executor could run;
//  - forward_only_schedule: every micro-batch's forward of every chunk once, matched messages, no deadlock in
//    simulate() (which, modelling training steps, then objects that no backward ran).
// The layer partition and pipeline_problem: test_pipeline_partition.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "parallel/schedule.h"

using namespace shardlab;

namespace {

struct Case {
  ScheduleKind kind;
  int p, m, v;
};

std::vector<Case> all_cases() {
  std::vector<Case> cs;
  for (ScheduleKind k : {ScheduleKind::gpipe, ScheduleKind::one_f_one_b, ScheduleKind::interleaved})
    for (int p = 1; p <= 6; ++p)
      for (int m = 1; m <= 12; ++m)
        for (int v = 1; v <= 3; ++v) {
          const bool valid = k == ScheduleKind::interleaved ? (p >= 2 && v >= 2 && m % p == 0) : v == 1;
          if (valid) cs.push_back({k, p, m, v});
        }
  return cs;
}

std::string label(const Case& c) {
  std::ostringstream o;
  o << schedule_name(c.kind) << " p=" << c.p << " m=" << c.m << " v=" << c.v;
  return o.str();
}

bool is_compute(Act a) { return a == Act::forward || a == Act::backward; }

// The test's own reading of a schedule: every rule the executor and bit-identity rely on. Returns the
// broken rules (empty: a good schedule). Messages are matched by (gradient?, receiving model chunk,
// micro-batch); the receiving stage must be the model chunk's stage.
std::vector<std::string> schedule_problems(const std::vector<StageActions>& st, int p, int m, int v, bool train) {
  std::vector<std::string> out;
  auto bad = [&](int s, size_t i, const std::string& what) {
    out.push_back("stage " + std::to_string(s) + " action " + std::to_string(i) + ": " + what);
  };
  if (static_cast<int>(st.size()) != p) {
    out.push_back(std::to_string(st.size()) + " stages, expected " + std::to_string(p));
    return out;
  }
  const int K = p * v;
  // (gradient?, to model chunk, micro-batch) → sending stages / receiving stages.
  std::map<std::tuple<bool, int, int>, std::vector<int>> sends, recvs;
  for (int s = 0; s < p; ++s) {
    // Per (mb, chunk): position of forward, backward, and of the messages around them.
    std::map<std::pair<int, int>, std::vector<size_t>> fwd, bwd, ra, sa, rg, sg;
    std::vector<std::vector<int>> bwd_order(v), fwd_order(v);
    for (size_t i = 0; i < st[s].size(); ++i) {
      const Action& a = st[s][i];
      if (a.micro_batch < 0 || a.micro_batch >= m || a.chunk < 0 || a.chunk >= v) {
        bad(s, i,
            std::string(act_name(a.act)) + " of micro-batch " + std::to_string(a.micro_batch) + ", chunk " +
                std::to_string(a.chunk) + ": out of range");
        continue;
      }
      const std::pair<int, int> key{a.micro_batch, a.chunk};
      const int k = a.chunk * p + s;
      switch (a.act) {
        case Act::forward:
          fwd[key].push_back(i);
          fwd_order[a.chunk].push_back(a.micro_batch);
          break;
        case Act::backward:
          bwd[key].push_back(i);
          bwd_order[a.chunk].push_back(a.micro_batch);
          break;
        case Act::recv_activation:
          ra[key].push_back(i);
          recvs[{false, k, a.micro_batch}].push_back(s);
          break;
        case Act::send_activation:
          sa[key].push_back(i);
          sends[{false, k + 1, a.micro_batch}].push_back((k + 1) % p);
          break;
        case Act::recv_gradient:
          rg[key].push_back(i);
          recvs[{true, k, a.micro_batch}].push_back(s);
          break;
        case Act::send_gradient:
          sg[key].push_back(i);
          sends[{true, k - 1, a.micro_batch}].push_back(((k - 1) % p + p) % p);
          break;
      }
    }
    for (int c = 0; c < v; ++c) {
      const int k = c * p + s;
      for (int mb = 0; mb < m; ++mb) {
        const std::pair<int, int> key{mb, c};
        const std::string what = "micro-batch " + std::to_string(mb) + " chunk " + std::to_string(c) + ": ";
        const size_t nf = fwd[key].size(), nb = bwd[key].size();
        if (nf != 1) bad(s, 0, what + std::to_string(nf) + " forwards");
        if (nb != (train ? 1u : 0u)) bad(s, 0, what + std::to_string(nb) + " backwards");
        if (nf == 1 && nb == 1 && !(fwd[key][0] < bwd[key][0])) bad(s, bwd[key][0], what + "backward before forward");
        // Messages: which exist, and where they sit relative to the compute.
        auto expect = [&](std::map<std::pair<int, int>, std::vector<size_t>>& msgs, bool needed, const char* name,
                          const std::vector<size_t>& compute, bool before) {
          const size_t n = msgs[key].size();
          if (n != (needed ? 1u : 0u)) {
            bad(s, 0, what + std::to_string(n) + " " + name + (needed ? ", expected 1" : ", expected none"));
            return;
          }
          if (!needed || compute.size() != 1) return;
          if (before ? !(msgs[key][0] < compute[0]) : !(msgs[key][0] > compute[0]))
            bad(s, msgs[key][0], what + name + (before ? " after" : " before") + " its compute");
        };
        expect(ra, k > 0, "recv activation", fwd[key], true);
        expect(sa, k < K - 1, "send activation", fwd[key], false);
        expect(rg, train && k < K - 1, "recv gradient", bwd[key], true);
        expect(sg, train && k > 0, "send gradient", bwd[key], false);
      }
      std::vector<int> in_order(m);
      for (int mb = 0; mb < m; ++mb) in_order[mb] = mb;
      if (train && bwd_order[c] != in_order) bad(s, 0, "chunk " + std::to_string(c) + ": backwards not in order");
      if (k == K - 1 && fwd_order[c] != in_order) bad(s, 0, "the last chunk's forwards not in micro-batch order");
    }
  }
  // Every send has exactly one receive on the stage it names, and nothing else is received.
  for (const auto& [key, to] : sends) {
    const auto& [grad, k, mb] = key;
    const std::string what = std::string(grad ? "gradient" : "activation") + " of micro-batch " + std::to_string(mb) +
                             " into model chunk " + std::to_string(k);
    auto it = recvs.find(key);
    const std::vector<int> from = it == recvs.end() ? std::vector<int>() : it->second;
    if (k < 0 || k >= K) out.push_back(what + ": no such chunk");
    if (to.size() != 1) out.push_back(what + ": sent " + std::to_string(to.size()) + " times");
    if (from.size() != 1) out.push_back(what + ": received " + std::to_string(from.size()) + " times");
    if (to.size() == 1 && from.size() == 1 && to[0] != from[0])
      out.push_back(what + ": sent to stage " + std::to_string(to[0]) + ", received on " + std::to_string(from[0]));
  }
  for (const auto& [key, from] : recvs)
    if (!sends.count(key))
      out.push_back(std::string(std::get<0>(key) ? "gradient" : "activation") + " of micro-batch " +
                    std::to_string(std::get<2>(key)) + " into model chunk " + std::to_string(std::get<1>(key)) +
                    " received but never sent");
  return out;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < 5; ++i) s += (i ? "; " : "") + v[i];
  return s;
}

// The chapter's bubble, written out (not bubble_formula()).
double chapter_bubble(const Case& c) {
  const int ideal = c.kind == ScheduleKind::interleaved ? c.v * c.m : c.m;
  return double(c.p - 1) / double(ideal + c.p - 1);
}

size_t count(const std::vector<StageActions>& st, Act a) {
  size_t n = 0;
  for (const StageActions& s : st)
    for (const Action& x : s) n += x.act == a;
  return n;
}

}  // namespace

TEST_CASE("schedules: every forward before its backward, once; every send one receive on the right stage",
          "[schedule]") {
  const std::vector<Case> cases = all_cases();
  // gpipe, 1f1b: 6 × 12; interleaved: Σ_{p ≥ 2} ⌊12/p⌋ = 17, × 2 values of v
  REQUIRE(cases.size() == 72 + 72 + 34);
  for (const Case& c : cases) {
    INFO(label(c));
    const std::vector<StageActions> st = make_schedule(c.kind, c.p, c.m, c.v);
    const std::vector<std::string> problems = schedule_problems(st, c.p, c.m, c.v, true);
    INFO(joined(problems));
    CHECK(problems.empty());
    // Each of the p·v − 1 chunk borders carries m activations forward and m gradients back.
    const size_t messages = size_t(c.p * c.v - 1) * c.m;
    CHECK(count(st, Act::send_activation) == messages);
    CHECK(count(st, Act::recv_gradient) == messages);
  }
}

TEST_CASE("schedules: simulate() completes; stash m (GPipe), min(p − s, m) (1F1B), ≤ Megatron's warmup + 1",
          "[schedule]") {
  for (const Case& c : all_cases()) {
    INFO(label(c));
    const Timeline t = simulate(make_schedule(c.kind, c.p, c.m, c.v), c.v, 1, 2);
    INFO("problem: " << t.problem);
    CHECK(t.complete);
    CHECK(t.problem.empty());
    CHECK(t.micro_batches == c.m);
    REQUIRE(t.stash.size() == size_t(c.p));
    for (int s = 0; s < c.p; ++s) {
      INFO("stage " << s << ": stash " << t.stash[s]);
      if (c.kind == ScheduleKind::gpipe) CHECK(t.stash[s] == c.m);
      if (c.kind == ScheduleKind::one_f_one_b) {
        CHECK(t.stash[s] == std::min(c.p - s, c.m));
        CHECK(t.stash[s] <= c.p);
      }
      if (c.kind == ScheduleKind::interleaved) {
        const int warmup = std::min(2 * (c.p - s - 1) + (c.v - 1) * c.p, c.m * c.v);
        CHECK(t.stash[s] <= std::min(warmup + 1, c.m * c.v));
        CHECK(t.stash[s] >= 1);
      }
      // Every micro-batch's forward and backward of every chunk ran: (f + b)·m of busy time per stage.
      CHECK(std::fabs(t.busy[s] - 3.0 * c.m) <= 1e-12 * c.m);
      CHECK(t.stages[s].size() == size_t(2 * c.m * c.v));
    }
  }
}

TEST_CASE("schedules: the simulated bubble equals the chapter's formula (f = 1, b = 2)", "[schedule][bubble]") {
  for (const Case& c : all_cases()) {
    INFO(label(c));
    const Timeline t = simulate(make_schedule(c.kind, c.p, c.m, c.v), c.v, 1, 2);
    REQUIRE(t.complete);
    const double b = t.bubble_fraction();
    INFO("simulated " << b << ", bubble_formula " << bubble_formula(c.kind, c.p, c.m, c.v) << ", chapter "
                      << chapter_bubble(c) << ", makespan " << t.makespan);
    CHECK(std::fabs(b - bubble_formula(c.kind, c.p, c.m, c.v)) <= 1e-12);
    CHECK(std::fabs(b - chapter_bubble(c)) <= 1e-12);
    // The time itself: (v·m + p − 1) chunk-slots of (f + b)/v.
    CHECK(std::fabs(t.makespan - 3.0 * (c.v * c.m + c.p - 1) / c.v) <= 1e-12 * t.makespan);
  }
}

TEST_CASE("schedules: a broken schedule is reported by simulate() and by the test's own matcher", "[schedule]") {
  SECTION("a send moved after a later receive: a cycle") {
    // GPipe, p = 2, m = 1: stage 0 = F0, send act 0, recv grad 0, B0. Swapped, stage 0 waits for a gradient
    // whose activation it has not sent.
    std::vector<StageActions> st = make_schedule(ScheduleKind::gpipe, 2, 1, 1);
    REQUIRE(st[0].size() == 4);
    REQUIRE(st[0][1].act == Act::send_activation);
    REQUIRE(st[0][2].act == Act::recv_gradient);
    CHECK(simulate(st, 1, 1, 2).complete);  // the control
    std::swap(st[0][1], st[0][2]);
    const Timeline t = simulate(st, 1, 1, 2);
    CHECK_FALSE(t.complete);
    CHECK(t.problem.find("deadlock") != std::string::npos);
  }
  SECTION("1F1B p = 4 m = 8: a stage's first receive moved after its first later send: the matcher objects") {
    std::vector<StageActions> st = make_schedule(ScheduleKind::one_f_one_b, 4, 8, 1);
    for (int s = 1; s < 4; ++s) {  // stage 0 receives nothing before it sends
      std::vector<StageActions> broken = st;
      StageActions& a = broken[s];
      const auto recv = std::find_if(a.begin(), a.end(), [](const Action& x) { return x.act == Act::recv_activation; });
      const auto send = std::find_if(
          recv, a.end(), [](const Action& x) { return x.act == Act::send_activation || x.act == Act::send_gradient; });
      REQUIRE(send != a.end());
      // The receive goes to just after the send: the forward would run on data that has not arrived (the
      // executor would compute on garbage), which simulate() does not model and the matcher must see.
      const Action r = *recv;
      const size_t at = size_t(send - a.begin());
      a.erase(recv);
      a.insert(a.begin() + long(at), r);
      INFO("stage " << s);
      const std::vector<std::string> mine = schedule_problems(broken, 4, 8, 1, true);
      CHECK_FALSE(mine.empty());  // a receive after its forward
    }
  }
  SECTION("every single send dropped, every single receive dropped") {
    for (const Case& c : {Case{ScheduleKind::gpipe, 3, 4, 1}, Case{ScheduleKind::one_f_one_b, 4, 6, 1},
                          Case{ScheduleKind::interleaved, 2, 4, 2}, Case{ScheduleKind::interleaved, 3, 3, 3}}) {
      const std::vector<StageActions> st = make_schedule(c.kind, c.p, c.m, c.v);
      size_t dropped = 0, reported = 0, matched = 0;
      for (int s = 0; s < c.p; ++s)
        for (size_t i = 0; i < st[s].size(); ++i) {
          if (is_compute(st[s][i].act)) continue;
          std::vector<StageActions> broken = st;
          broken[s].erase(broken[s].begin() + long(i));
          const Timeline t = simulate(broken, c.v, 1, 2);
          ++dropped;
          reported += !t.complete && !t.problem.empty();
          matched += !schedule_problems(broken, c.p, c.m, c.v, true).empty();
        }
      INFO(label(c) << ": " << dropped << " messages dropped one at a time");
      CHECK(dropped == 4 * size_t(c.p * c.v - 1) * c.m);
      CHECK(reported == dropped);
      CHECK(matched == dropped);
    }
  }
  SECTION("a backward before its forward; a forward twice") {
    std::vector<StageActions> st = make_schedule(ScheduleKind::gpipe, 1, 2, 1);  // F0 F1 B0 B1
    REQUIRE(st[0].size() == 4);
    std::swap(st[0][1], st[0][2]);  // F0 B0 F1 B1: still fine
    CHECK(simulate(st, 1, 1, 2).complete);
    std::swap(st[0][0], st[0][1]);  // B0 F0 F1 B1
    Timeline t = simulate(st, 1, 1, 2);
    CHECK_FALSE(t.complete);
    CHECK(t.problem.find("before its forward") != std::string::npos);
    CHECK_FALSE(schedule_problems(st, 1, 2, 1, true).empty());
    st = make_schedule(ScheduleKind::gpipe, 1, 2, 1);
    st[0][1] = st[0][0];  // F0 F0 B0 B1
    t = simulate(st, 1, 1, 2);
    CHECK_FALSE(t.complete);
    CHECK(t.problem.find("twice") != std::string::npos);
    CHECK_FALSE(schedule_problems(st, 1, 2, 1, true).empty());
  }
  SECTION("a send repeated; a micro-batch left out of every stage") {
    std::vector<StageActions> st = make_schedule(ScheduleKind::gpipe, 2, 2, 1);  // stage 0: F0 s F1 s r B0 r B1
    REQUIRE(st[0][1].act == Act::send_activation);
    st[0].insert(st[0].begin() + 2, st[0][1]);  // the activation of micro-batch 0 sent twice
    Timeline t = simulate(st, 1, 1, 2);
    CHECK_FALSE(t.complete);
    CHECK(t.problem.find("twice") != std::string::npos);
    // Micro-batch 0 of 3 removed from both stages, its messages too: the rest still plays through.
    st = make_schedule(ScheduleKind::one_f_one_b, 2, 3, 1);
    for (StageActions& a : st)
      a.erase(std::remove_if(a.begin(), a.end(), [](const Action& x) { return x.micro_batch == 0; }), a.end());
    t = simulate(st, 1, 1, 2);
    INFO(t.problem);
    CHECK_FALSE(t.complete);
    CHECK(t.problem.find("never runs micro-batch 0") != std::string::npos);
    // (Leaving a micro-batch out of one chunk only breaks the chain of messages: a deadlock, caught above.)
  }
  SECTION("make_schedule refuses what no stage could run") {
    CHECK_THROWS_AS(make_schedule(ScheduleKind::interleaved, 2, 3, 2), std::invalid_argument);  // m % p ≠ 0
    CHECK_THROWS_AS(make_schedule(ScheduleKind::interleaved, 2, 2, 1), std::invalid_argument);  // v < 2
    CHECK_THROWS_AS(make_schedule(ScheduleKind::one_f_one_b, 2, 2, 2), std::invalid_argument);  // v ≠ 1
    CHECK_THROWS_AS(make_schedule(ScheduleKind::gpipe, 2, 0, 1), std::invalid_argument);        // m < 1
    CHECK_THROWS_AS(make_schedule(ScheduleKind::interleaved, 1, 2, 2), std::invalid_argument);  // p < 2
    CHECK_NOTHROW(make_schedule(ScheduleKind::interleaved, 2, 4, 3));
  }
  SECTION("backwards out of micro-batch order: simulate() is content, the bit-identity rule is not") {
    std::vector<StageActions> st = make_schedule(ScheduleKind::gpipe, 1, 2, 1);  // F0 F1 B0 B1
    std::swap(st[0][2], st[0][3]);
    CHECK(simulate(st, 1, 1, 2).complete);
    const std::vector<std::string> mine = schedule_problems(st, 1, 2, 1, true);
    REQUIRE(mine.size() == 1);
    CHECK(mine[0].find("not in order") != std::string::npos);
  }
}

TEST_CASE("schedules: forward_only_schedule runs every forward once, matched, without deadlock", "[schedule]") {
  for (int p = 1; p <= 4; ++p)
    for (int v = 1; v <= 3; ++v)
      for (int m : {1, 3, 5}) {
        INFO("p=" << p << " v=" << v << " m=" << m);
        const std::vector<StageActions> st = forward_only_schedule(p, m, v);
        const std::vector<std::string> problems = schedule_problems(st, p, m, v, false);
        INFO(joined(problems));
        CHECK(problems.empty());
        CHECK(count(st, Act::backward) == 0);
        CHECK(count(st, Act::send_activation) == size_t(p * v - 1) * m);
        // simulate() models training steps: it plays every message through (no deadlock) and then objects
        // only that no backward ran.
        const Timeline t = simulate(st, v, 1, 2);
        INFO("simulate: " << t.problem);
        CHECK(t.problem.find("never ran its backward") != std::string::npos);
        CHECK(t.problem.find("deadlock") == std::string::npos);
      }
}
