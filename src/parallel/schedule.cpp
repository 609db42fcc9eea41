// Pipeline schedules: the action lists, their simulation and their text grid (see schedule.h).
#include "parallel/schedule.h"

#include "parallel/stage_order.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <stdexcept>
#include <tuple>

namespace shardlab {

bool parse_schedule(const std::string& name, ScheduleKind* out) { return read_word(kScheduleWords, name, out); }
const char* schedule_name(ScheduleKind k) { return word_of(kScheduleWords, k); }

const char* act_name(Act a) {
  switch (a) {
    case Act::recv_activation: return "recv activation";
    case Act::forward: return "forward";
    case Act::send_activation: return "send activation";
    case Act::recv_gradient: return "recv gradient";
    case Act::backward: return "backward";
    case Act::send_gradient: return "send gradient";
  }
  return "?";
}

namespace {

// The compute order of one stage, then the messages around each compute action: a forward of model
// chunk k receives from chunk k − 1 (unless k is the first) and sends to k + 1 (unless the last);
// a backward the other way round.
StageActions with_messages(const std::vector<Compute>& order, int stage, int p, int v) {
  StageActions out;
  const int K = p * v;
  for (const Compute& c : order) {
    const int k = c.chunk * p + stage;
    if (c.forward) {
      if (k > 0) out.push_back({Act::recv_activation, c.micro_batch, c.chunk});
      out.push_back({Act::forward, c.micro_batch, c.chunk});
      if (k < K - 1) out.push_back({Act::send_activation, c.micro_batch, c.chunk});
    } else {
      if (k < K - 1) out.push_back({Act::recv_gradient, c.micro_batch, c.chunk});
      out.push_back({Act::backward, c.micro_batch, c.chunk});
      if (k > 0) out.push_back({Act::send_gradient, c.micro_batch, c.chunk});
    }
  }
  return out;
}

}  // namespace

std::vector<StageActions> make_schedule(ScheduleKind kind, int p, int m, int v) {
  if (std::string why = schedule_shape_problem(kind, p, m, v); !why.empty())
    throw std::invalid_argument("make_schedule: " + why);
  std::vector<StageActions> stages;
  for (int s = 0; s < p; ++s) stages.push_back(with_messages(stage_order(kind, s, p, m, v), s, p, v));
  return stages;
}

std::vector<StageActions> forward_only_schedule(int p, int m, int v) {
  std::vector<StageActions> stages;
  for (int s = 0; s < p; ++s) {
    std::vector<Compute> order;  // micro-batch by micro-batch, through each of the stage's chunks in turn
    for (int i = 0; i < m; ++i)
      for (int c = 0; c < v; ++c) order.push_back({true, i, c});
    stages.push_back(with_messages(order, s, p, v));
  }
  return stages;
}

double Timeline::bubble_fraction() const {
  double idle = 0;
  for (double b : busy) idle += makespan - b;
  return stages.empty() || makespan <= 0 ? 0 : idle / (double(stages.size()) * makespan);
}

Timeline simulate(const std::vector<StageActions>& schedule, int v, double forward, double backward) {
  const int p = static_cast<int>(schedule.size());
  Timeline t;
  t.stages.resize(p);
  t.busy.assign(p, 0);
  t.stash.assign(p, 0);
  // A message in flight: (activation?, model chunk it goes to, micro-batch) → arrival time.
  std::map<std::tuple<bool, int, int>, double> sent;
  std::vector<size_t> next(p, 0);
  std::vector<double> clock(p, 0);
  std::vector<std::map<std::pair<int, int>, int>> state(p);  // (mb, chunk) → 1 forward ran, 2 backward ran
  std::vector<int> alive(p, 0);
  const double cost_f = forward / v, cost_b = backward / v;  // a chunk holds 1/v of the stage's layers
  for (bool moved = true; moved;) {
    moved = false;
    for (int s = 0; s < p; ++s) {
      while (next[s] < schedule[s].size()) {
        const Action& a = schedule[s][next[s]];
        const int k = a.chunk * p + s;
        if (a.act == Act::recv_activation || a.act == Act::recv_gradient) {
          const auto key = std::make_tuple(a.act == Act::recv_activation, k, a.micro_batch);
          auto it = sent.find(key);
          if (it == sent.end()) break;  // not sent yet: wait
          clock[s] = std::max(clock[s], it->second);
          sent.erase(it);
        } else if (a.act == Act::send_activation || a.act == Act::send_gradient) {
          const bool act = a.act == Act::send_activation;
          if (!sent.emplace(std::make_tuple(act, act ? k + 1 : k - 1, a.micro_batch), clock[s]).second) {
            t.problem = "stage " + std::to_string(s) + ": " + act_name(a.act) + " of micro-batch " +
                        std::to_string(a.micro_batch) + " twice before it was received";
            return t;
          }
        } else {
          int& st = state[s][{a.micro_batch, a.chunk}];
          const bool fwd = a.act == Act::forward;
          if (fwd ? st != 0 : st != 1) {
            t.problem = "stage " + std::to_string(s) + ": " + act_name(a.act) + " of micro-batch " +
                        std::to_string(a.micro_batch) + (fwd ? " twice" : " before its forward");
            return t;
          }
          st = fwd ? 1 : 2;
          alive[s] += fwd ? 1 : -1;
          t.stash[s] = std::max(t.stash[s], alive[s]);
          const double d = fwd ? cost_f : cost_b;
          t.stages[s].push_back({a.act, a.micro_batch, a.chunk, clock[s], clock[s] + d});
          clock[s] += d;
          t.busy[s] += d;
        }
        ++next[s];
        moved = true;
      }
    }
  }
  for (int s = 0; s < p; ++s)
    if (next[s] < schedule[s].size()) {
      const Action& a = schedule[s][next[s]];
      t.problem = "deadlock: stage " + std::to_string(s) + " waits forever to " + act_name(a.act) + " of micro-batch " +
                  std::to_string(a.micro_batch);
      return t;
    }
  if (!sent.empty()) {  // name the first: who sent what (the sender's chunk is the receiver's ∓ 1)
    const auto& [activation, to_chunk, mb] = sent.begin()->first;
    const int from = ((activation ? to_chunk - 1 : to_chunk + 1) % p + p) % p;
    t.problem = "stage " + std::to_string(from) + " sends the " + (activation ? "activation" : "gradient") +
                " of micro-batch " + std::to_string(mb) + ", which no stage receives";
    return t;
  }
  // Every stage ran micro-batches 0 … M−1 through each of its v chunks, forward and backward.
  t.micro_batches = p ? static_cast<int>(state[0].size()) / std::max(v, 1) : 0;
  for (int s = 0; s < p; ++s) {
    for (const auto& [key, st] : state[s])
      if (st != 2) {
        t.problem =
            "stage " + std::to_string(s) + ": micro-batch " + std::to_string(key.first) + " never ran its backward";
        return t;
      }
    for (int i = 0; i < t.micro_batches; ++i)
      for (int c = 0; c < v; ++c)
        if (!state[s].count({i, c})) {
          t.problem = "stage " + std::to_string(s) + " never runs micro-batch " + std::to_string(i) +
                      (v > 1 ? " on its chunk " + std::to_string(c) : "");
          return t;
        }
    if (state[s].size() != size_t(t.micro_batches) * v) {
      t.problem = "stage " + std::to_string(s) + " runs micro-batches other than 0 … " +
                  std::to_string(t.micro_batches - 1) + " on each chunk";
      return t;
    }
    t.makespan = std::max(t.makespan, clock[s]);
  }
  t.complete = true;
  return t;
}

std::string schedule_grid(const Timeline& t, int v, double unit) {
  // Each slot takes the cells its times round to, at least one, never one an earlier slot took: every
  // forward and backward shows, even one shorter than a cell (a row then runs a few cells longer).
  std::vector<std::vector<std::string>> rows;
  size_t width = static_cast<size_t>(std::max(0.0, std::ceil(t.makespan / unit - 1e-9)));
  for (const std::vector<Slot>& stage : t.stages) {
    std::vector<Slot> slots = stage;
    std::stable_sort(slots.begin(), slots.end(), [](const Slot& a, const Slot& b) { return a.start < b.start; });
    std::vector<std::string> row;
    for (const Slot& slot : slots) {
      std::string label = (slot.act == Act::forward ? "F" : "B") + std::to_string(slot.micro_batch);
      if (v > 1) label += char('a' + slot.chunk);
      label.resize(std::max<size_t>(label.size(), 3), ' ');
      const size_t c0 = std::max(row.size(), static_cast<size_t>(std::max(0.0, std::round(slot.start / unit))));
      const size_t c1 = std::max(c0 + 1, static_cast<size_t>(std::max(0.0, std::round(slot.end / unit))));
      row.resize(c0, " . ");
      row.resize(c1, label);
    }
    width = std::max(width, row.size());
    rows.push_back(row);
  }
  std::ostringstream o;
  for (size_t s = 0; s < rows.size(); ++s) {
    rows[s].resize(width, " . ");
    o << "  stage " << s << " |";
    for (const std::string& c : rows[s]) o << c << (c.size() < 4 ? " " : "");
    o << "|\n";
  }
  return o.str();
}

std::string schedule_shape_problem(ScheduleKind kind, int p, int m, int v) {
  if (p < 1 || m < 1 || v < 1) return "stages, micro-batches and virtual stages must all be at least 1";
  if (kind == ScheduleKind::interleaved && p < 2)
    return "--schedule interleaved needs --pp 2 or more (one stage has no neighbour to interleave with)";
  if (kind == ScheduleKind::interleaved && v < 2)
    return "--schedule interleaved gives every stage several model chunks: add --virtual-stages 2 or more";
  if (kind != ScheduleKind::interleaved && v > 1)
    return "--virtual-stages " + std::to_string(v) +
           " needs --schedule interleaved (gpipe and 1f1b hold one chunk per stage)";
  if (kind == ScheduleKind::interleaved && m % p != 0)
    return "--schedule interleaved runs micro-batches in groups of --pp " + std::to_string(p) + ": --micro-batches " +
           std::to_string(m) + " is not a multiple of it";
  return "";
}

double bubble_formula(ScheduleKind kind, int p, int m, int v) {
  if (kind == ScheduleKind::interleaved) return double(p - 1) / (double(v) * m + p - 1);
  return double(p - 1) / (m + p - 1);
}

}  // namespace shardlab
