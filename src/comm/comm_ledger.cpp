// Comm ledger bookkeeping (see comm_ledger.h).
#include "comm/comm_ledger.h"

#include <nlohmann/json.hpp>
#include <tuple>

namespace shardlab {

const char* axis_name(Axis a) {
  switch (a) {
    case Axis::world: return "world";
    case Axis::dp: return "dp";
    case Axis::tp: return "tp";
    case Axis::pp: return "pp";
    case Axis::cp: return "cp";
    case Axis::ep: return "ep";
  }
  return "?";
}

CommCall& CommLedger::begin(const std::string& op, Axis axis, const std::string& impl, uint64_t elements,
                            uint64_t elem_bytes, const std::string& purpose) {
  CommCall c;
  c.purpose = purpose;
  c.seq = seq_++;
  c.op = op;
  c.axis = axis;
  c.impl = impl;
  c.elements = elements;
  c.elem_bytes = elem_bytes;
  calls_.push_back(c);
  return calls_.back();
}

static void accumulate(CommCall& t, const CommCall& c) {
  t.elements += c.elements;
  t.sent_intra += c.sent_intra;
  t.sent_inter += c.sent_inter;
  t.recv_intra += c.recv_intra;
  t.recv_inter += c.recv_inter;
}

CommCall CommLedger::total(const std::string& op, const Axis* axis) const { return total_since(0, op, axis); }

CommCall CommLedger::total_since(uint64_t from_seq, const std::string& op, const Axis* axis) const {
  CommCall t;
  t.op = op.empty() ? "any" : op;
  for (const CommCall& c : calls_) {
    if (c.seq < from_seq || (!op.empty() && c.op != op) || (axis && c.axis != *axis)) continue;
    accumulate(t, c);
    ++t.seq;  // the number of matching calls
  }
  return t;
}

nlohmann::json CommLedger::to_json(size_t max_calls) const {
  std::map<std::tuple<std::string, std::string, std::string, std::string>, std::pair<uint64_t, CommCall>> groups;
  for (const CommCall& c : calls_) {
    auto& g = groups[{c.op, axis_name(c.axis), c.impl, c.purpose}];
    ++g.first;
    accumulate(g.second, c);
  }
  nlohmann::json totals = nlohmann::json::array();
  for (const auto& [key, g] : groups) {
    totals.push_back({{"op", std::get<0>(key)},
                      {"axis", std::get<1>(key)},
                      {"impl", std::get<2>(key)},
                      {"calls", g.first},
                      {"elements", g.second.elements},
                      {"sent_intra", g.second.sent_intra},
                      {"sent_inter", g.second.sent_inter},
                      {"recv_intra", g.second.recv_intra},
                      {"recv_inter", g.second.recv_inter}});
    if (!std::get<3>(key).empty()) totals.back()["purpose"] = std::get<3>(key);
  }
  nlohmann::json calls = nlohmann::json::array();
  size_t first = calls_.size() > max_calls ? calls_.size() - max_calls : 0;
  for (size_t i = first; i < calls_.size(); ++i) {
    const CommCall& c = calls_[i];
    calls.push_back({{"seq", c.seq},
                     {"op", c.op},
                     {"axis", axis_name(c.axis)},
                     {"impl", c.impl},
                     {"elements", c.elements},
                     {"elem_bytes", c.elem_bytes},
                     {"sent_intra", c.sent_intra},
                     {"sent_inter", c.sent_inter},
                     {"recv_intra", c.recv_intra},
                     {"recv_inter", c.recv_inter}});
    if (!c.purpose.empty()) calls.back()["purpose"] = c.purpose;
  }
  return {{"totals", totals}, {"calls", calls}, {"calls_total", calls_.size()}, {"calls_kept", calls_.size() - first}};
}

}  // namespace shardlab
