// check/moe_check.cpp — a MoE run's rows and an ep rank's all-to-alls against the formulas (see moe_check.h).
#include "check/moe_check.h"

#include <map>
#include <stdexcept>
#include <tuple>

#include "check/ledger_read.h"
#include "report/format.h"

namespace shardlab::plan {

namespace {
using u64 = std::uint64_t;

// [n, m, o, n, m, o, …] (after `skip` leading numbers) as one forward's rows of `blocks` MoE blocks.
std::vector<MoeRows> forward_rows(const Json& v, size_t skip, size_t blocks, const std::string& where) {
  if (!v.is_array() || v.size() != skip + 3 * blocks)
    throw std::runtime_error(where + " must list " + std::to_string(skip + 3 * blocks) + " numbers (" +
                             (skip ? "samples, then " : "") + "n, m, own per MoE block)");
  for (const Json& x : v)
    if (!x.is_number_unsigned() || x.get<u64>() > (u64(1) << 40))
      throw std::runtime_error(where + ": a row count is not a non-negative integer a run could have");
  std::vector<MoeRows> rows(blocks);
  for (size_t b = 0; b < blocks; ++b) {
    rows[b] = {v[skip + 3 * b].get<u64>(), v[skip + 3 * b + 1].get<u64>(), v[skip + 3 * b + 2].get<u64>()};
    if (rows[b].own > rows[b].kept || rows[b].own > rows[b].received)
      throw std::runtime_error(where + ": own rows " + std::to_string(rows[b].own) + " exceed n " +
                               std::to_string(rows[b].kept) + " or m " + std::to_string(rows[b].received));
  }
  return rows;
}

u64 moved(const Json& t, bool sent, const std::string& w) {
  return sent ? need_u64(t, "sent_intra", w) + need_u64(t, "sent_inter", w)
              : need_u64(t, "recv_intra", w) + need_u64(t, "recv_inter", w);
}

std::string call_text(u64 elements, u64 elem_bytes, u64 sent, u64 received, bool bytes) {
  std::string s = commas(elements) + " elements of " + std::to_string(elem_bytes) + " B";
  if (bytes) s += ", " + commas(sent) + " B sent, " + commas(received) + " B received";
  return s;
}
}  // namespace

std::vector<ChunkRows> read_moe_rows(const Json& rank, const std::vector<std::vector<int>>& layers, u64 train_forwards,
                                     const std::string& where) {
  const std::string w = where + " moe.forwards";
  const Json& f = need(need(rank, "moe", where), "forwards", where + " moe");
  if (!f.is_array() || f.size() != layers.size())
    throw std::runtime_error(w + " must hold one entry per model chunk of the stage (" + std::to_string(layers.size()) +
                             ")");
  std::vector<ChunkRows> out(layers.size());
  for (size_t c = 0; c < layers.size(); ++c) {
    const std::string wc = w + "[" + std::to_string(c) + "]";
    ChunkRows& r = out[c];
    const Json& ls = need(f[c], "layers", wc);
    if (!ls.is_array()) throw std::runtime_error(wc + ".layers must be an array");
    for (const Json& l : ls) {
      if (!l.is_number_unsigned()) throw std::runtime_error(wc + ".layers must hold layer numbers");
      r.layers.push_back(static_cast<int>(std::min<u64>(l.get<u64>(), 1u << 30)));
    }
    if (r.layers != layers[c])
      throw std::runtime_error(wc + ".layers is not this chunk's MoE blocks by the layout and the moe section");
    const Json& train = need(f[c], "train", wc);
    if (!train.is_array() || (!r.layers.empty() && train.size() != train_forwards))
      throw std::runtime_error(
          wc + ".train must hold one entry per training forward, steps × accum = " + std::to_string(train_forwards));
    for (const Json& t : train) r.train.push_back(forward_rows(t, 0, r.layers.size(), wc + ".train[]"));
    const Json& eval = need(f[c], "eval", wc);
    if (!eval.is_array()) throw std::runtime_error(wc + ".eval must be an array");
    for (const Json& e : eval) {
      r.eval.push_back(forward_rows(e, 1, r.layers.size(), wc + ".eval[]"));
      r.eval_samples.push_back(e[0].get<u64>());
      if (r.eval_samples.back() < 1 || r.eval_samples.back() > (u64(1) << 24))
        throw std::runtime_error(wc + ".eval[]: a forward of " + std::to_string(r.eval_samples.back()) + " samples");
    }
  }
  return out;
}

std::vector<EpCall> ep_run_calls(const EpRankShape& s, const StageActions& actions,
                                 const std::vector<ChunkRows>& rows) {
  std::vector<EpCall> out;
  for (u64 step = 0; step < s.steps; ++step)
    for (const Action& a : actions) {
      if (a.act != Act::forward && a.act != Act::backward) continue;
      const bool backward = a.act == Act::backward;
      const ChunkRows& cr = rows.at(a.chunk);
      const std::vector<MoeRows>& f = cr.train.at(step * s.accum + a.micro_batch);
      for (size_t i = 0; i < cr.layers.size(); ++i) {
        const size_t b = backward ? cr.layers.size() - 1 - i : i;  // backward walks the blocks in reverse
        const std::string where = "step " + std::to_string(step + 1) + ", micro-batch " +
                                  std::to_string(a.micro_batch) + ", layer " + std::to_string(cr.layers[b]) +
                                  (backward ? ", backward" : ", forward");
        for (const AllToAll& c :
             ep_block_calls(backward, s.full_recompute, f[b], s.hidden, s.elem_bytes, s.experts, s.ep))
          out.push_back({c, c.purpose == "moe_counts" ? MoeRows{} : f[b], where});
      }
    }
  return out;
}

EpRow check_ep_rank(const Json& rank, const EpRankShape& s, const std::vector<EpCall>& calls, bool bytes,
                    const std::string& where) {
  EpRow row;
  std::map<std::string, EpPurposeRow> by;
  for (const char* p : {"moe_counts", "moe_dispatch", "moe_combine"}) by[p].purpose = p;
  for (const EpCall& c : calls) {
    EpPurposeRow& r = by.at(c.call.purpose);
    r.calls += 1, r.elements += c.call.elements, r.sent += c.call.sent, r.received += c.call.received;
    row.sent += c.call.sent;
  }
  const Json& comm = need(rank, "comm", where);
  for (const Json& t : need(comm, "totals", where + ".comm")) {
    const std::string w = where + ".comm.totals[]";
    if (need_string(t, "axis", w) != "ep" || need_string(t, "op", w) != "all_to_all") continue;
    const std::string p = t.contains("purpose") ? need_string(t, "purpose", w) : "";
    if (!by.count(p)) by[p].purpose = p.empty() ? "(no purpose)" : p;  // no formula: a mismatch
    EpPurposeRow& r = by[p];
    r.calls_measured += need_u64(t, "calls", w), r.elements_measured += need_u64(t, "elements", w);
    r.sent_measured += moved(t, true, w), r.received_measured += moved(t, false, w);
  }
  for (const char* p : {"moe_counts", "moe_dispatch", "moe_combine"}) row.purposes.push_back(by.at(p));
  for (auto& [p, r] : by)
    if (p != "moe_counts" && p != "moe_dispatch" && p != "moe_combine") row.purposes.push_back(r);
  bool totals = true;
  for (EpPurposeRow& r : row.purposes) {
    r.match = r.calls == r.calls_measured && r.elements == r.elements_measured &&
              (!bytes || (r.sent == r.sent_measured && r.received == r.received_measured));
    totals = totals && r.match;
  }
  // The kept records: the last ones of the run's calls (comm.calls keeps the newest), one by one.
  std::vector<const Json*> kept;
  if (comm.contains("calls")) {
    const Json& cs = comm.at("calls");
    if (!cs.is_array()) throw std::runtime_error(where + ".comm.calls must be an array");
    for (const Json& k : cs) {
      const std::string w = where + ".comm.calls[]";
      if (need_string(k, "axis", w) == "ep" && need_string(k, "op", w) == "all_to_all") kept.push_back(&k);
    }
  }
  const bool whole = comm.contains("calls_total") && comm.contains("calls_kept") &&
                     need_u64(comm, "calls_total", where + ".comm") == need_u64(comm, "calls_kept", where + ".comm");
  if (kept.size() > calls.size() || (whole && kept.size() != calls.size()))
    row.bad_records.push_back(std::to_string(kept.size()) + " all_to_all records kept for the " +
                              std::to_string(calls.size()) + " calls of the formula");
  const size_t shared = std::min(kept.size(), calls.size()), first = calls.size() - shared;
  for (size_t i = 0; i < shared; ++i) {
    const Json& k = *kept[kept.size() - shared + i];
    const EpCall& want = calls[first + i];
    const std::string w = where + ".comm.calls[]";
    const std::string purpose = k.contains("purpose") ? need_string(k, "purpose", w) : "";
    const u64 elements = need_u64(k, "elements", w), eb = need_u64(k, "elem_bytes", w), sent = moved(k, true, w),
              received = moved(k, false, w);
    ++row.records_checked;
    if (purpose == want.call.purpose && elements == want.call.elements && eb == want.call.elem_bytes &&
        (!bytes || (sent == want.call.sent && received == want.call.received)))
      continue;
    row.bad_records.push_back(
        want.call.purpose + " #" + std::to_string(need_u64(k, "seq", w)) + " (" + want.where + "): expected " +
        call_text(want.call.elements, want.call.elem_bytes, want.call.sent, want.call.received, bytes) + ", got " +
        (purpose == want.call.purpose ? "" : purpose + " of ") + call_text(elements, eb, sent, received, bytes));
  }
  // The rank's own tallies (parallel/expert_parallel.h's Moved) against the same calls.
  const Json& moe = need(rank, "moe", where);
  u64 dispatches = 0, combines = 0, counts = 0;
  for (const EpCall& c : calls)
    (c.call.purpose == "moe_counts" ? counts : c.call.purpose == "moe_dispatch" ? dispatches : combines) += 1;
  for (const auto& [key, want] :
       {std::pair<const char*, u64>{"count_exchanges", counts}, {"dispatches", dispatches}, {"combines", combines}}) {
    const Json& v = need(moe, key, where + " moe");
    if (!v.is_number() || v.get<double>() != double(want))
      row.bad_tallies.push_back(std::string("moe.") + key + ": expected " + std::to_string(want) + ", got " + v.dump());
  }
  // The rows it tallied per ep rank, summed over the ranks and for its own: n, m and o over the exchanges.
  const u64 own_rank = need_u64(moe, "ep_rank", where + " moe");
  u64 n = 0, m = 0, o = 0, cn = 0, cm = 0, co = 0;
  for (const EpCall& c : calls)
    if (c.call.purpose == "moe_dispatch")
      n += c.rows.kept, m += c.rows.received, o += c.rows.own;
    else if (c.call.purpose == "moe_combine")
      cn += c.rows.kept, cm += c.rows.received, co += c.rows.own;
  for (const auto& [key, total, own] : {std::tuple<const char*, u64, u64>{"dispatch_rows_sent", n, o},
                                        {"dispatch_rows_received", m, o},
                                        {"combine_rows_sent", cm, co},
                                        {"combine_rows_received", cn, co}}) {
    const Json& v = need(moe, key, where + " moe");
    double sum = 0, mine = -1;
    if (v.is_array() && v.size() == s.ep)
      for (size_t j = 0; j < v.size(); ++j) {
        sum += v[j].is_number() ? v[j].get<double>() : -1e300;
        if (j == own_rank) mine = v[j].is_number() ? v[j].get<double>() : -1;
      }
    if (!v.is_array() || v.size() != s.ep || sum != double(total) || mine != double(own))
      row.bad_tallies.push_back(std::string("moe.") + key + ": expected " + commas(total) +
                                " rows over the ep ranks, " + commas(own) + " its own; got " + v.dump());
  }
  // At an even load: every dispatch and combine s·b·k·h·w·(e−1)/e, the counts as they are.
  const EpLayerBytes even = ep_even_layer_bytes(s.tokens, s.top_k, s.hidden, s.elem_bytes, s.experts, s.ep);
  row.sent_even = counts * even.counts + (dispatches + combines) * even.all_to_all;
  row.match = totals && row.bad_records.empty() && row.bad_tallies.empty();
  return row;
}

}  // namespace shardlab::plan
