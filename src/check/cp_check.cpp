// check/cp_check.cpp — a context-parallel rank's ring attention traffic and buffers (see cp_check.h).
#include "check/cp_check.h"

#include "check/ledger_read.h"
#include "plan/exact_cp_bytes.h"

namespace shardlab::plan {

namespace {
using u64 = std::uint64_t;
using u128 = unsigned __int128;

bool times_equals(u64 per_step, u64 steps, u64 measured) { return u128(per_step) * steps == u128(measured); }

// The bytes a record moved, sent (op send) or received (op recv).
u64 moved(const Json& t, bool send, const std::string& where) {
  return send ? need_u64(t, "sent_intra", where) + need_u64(t, "sent_inter", where)
              : need_u64(t, "recv_intra", where) + need_u64(t, "recv_inter", where);
}
}  // namespace

namespace {
// The exact mode: the all-to-alls of whole samples' rows (plan/exact_cp_bytes.h), no ring.
CpRow check_exact_cp_rank(const Json& rank, const CpShape& shape, u64 steps, const std::string& where) {
  CpRow row;
  const ExactCpStep f = exact_cp_step(shape, shape.head);
  row.blocks = shape.blocks;
  row.message_bytes = f.sent_per_call;
  row.message_elements = f.call_elements;
  row.formula.messages = f.calls;
  row.formula.forward = f.sent();  // every call in one total
  for (const Json& t : need(need(rank, "comm", where), "totals", where + ".comm")) {
    const std::string w = where + ".comm.totals[]";
    if (need_string(t, "axis", w) != "cp") continue;
    const std::string op = need_string(t, "op", w);
    if (op == "send" || op == "recv") row.bad_records.push_back("a ring message (" + op + ") in the exact mode");
    if (op != "all_to_all") continue;
    if (!t.contains("purpose") || t.at("purpose") != "exact_rows")
      row.bad_records.push_back("an all-to-all on cp under another purpose than exact_rows");
    row.sends += need_u64(t, "calls", w);
    row.receives += need_u64(t, "calls", w);
    row.sent_elements += need_u64(t, "elements", w);
    row.sent += moved(t, true, w);
    row.received += moved(t, false, w);
  }
  row.received_elements = row.sent_elements;
  const Json& memory = need(rank, "memory", where);
  row.buffer_formula = exact_cp_comm_buffer(shape, shape.micro_batch);
  row.buffer_measured =
      need_u64(need(memory, "comm_buffer", where + ".memory"), "current", where + ".memory.comm_buffer");
  row.totals_match = times_equals(f.calls, steps, row.sends) &&
                     times_equals(f.calls * f.call_elements, steps, row.sent_elements) &&
                     times_equals(f.sent(), steps, row.sent) && times_equals(f.sent(), steps, row.received);
  row.match = row.totals_match && row.bad_records.empty() && row.buffer_measured == row.buffer_formula;
  return row;
}
}  // namespace

CpRow check_cp_rank(const Json& rank, const CpShape& shape, u64 steps, const std::string& where) {
  if (shape.exact) return check_exact_cp_rank(rank, shape, steps, where);
  CpRow row;
  row.formula = cp_step_bytes(shape);
  row.blocks = shape.blocks;
  row.message_bytes = cp_message_bytes(shape);
  row.message_elements = cp_message_elements(shape);
  const Json& comm = need(rank, "comm", where);
  // Every point-to-point message on axis cp is ring attention's (the loss's sums over cp are "gather").
  for (const Json& t : need(comm, "totals", where + ".comm")) {
    const std::string w = where + ".comm.totals[]";
    if (need_string(t, "axis", w) != "cp") continue;
    const std::string op = need_string(t, "op", w);
    if (op != "send" && op != "recv") continue;
    const bool send = op == "send";
    (send ? row.sends : row.receives) += need_u64(t, "calls", w);
    (send ? row.sent_elements : row.received_elements) += need_u64(t, "elements", w);
    (send ? row.sent : row.received) += moved(t, send, w);
  }
  if (comm.contains("calls")) {  // the kept records, each one message
    const Json& calls = comm.at("calls");
    if (!calls.is_array()) throw std::runtime_error(where + ".comm.calls must be an array");
    for (const Json& k : calls) {
      const std::string w = where + ".comm.calls[]";
      if (need_string(k, "axis", w) != "cp") continue;
      const std::string op = need_string(k, "op", w);
      if (op != "send" && op != "recv") continue;
      const u64 elements = need_u64(k, "elements", w), bytes = moved(k, op == "send", w);
      if (elements != row.message_elements || bytes != row.message_bytes)
        row.bad_records.push_back(op + " #" + std::to_string(need_u64(k, "seq", w)) + ": " + std::to_string(elements) +
                                  " elements, " + std::to_string(bytes) +
                                  " B (one message: " + std::to_string(row.message_elements) + " elements, " +
                                  std::to_string(row.message_bytes) + " B)");
    }
  }
  const CpRingBuffers buffers = cp_ring_buffers(shape, shape.micro_batch);
  const Json& memory = need(rank, "memory", where);
  row.buffer_formula = buffers.comm_buffer;
  row.buffer_measured =
      need_u64(need(memory, "comm_buffer", where + ".memory"), "current", where + ".memory.comm_buffer");
  row.workspace_floor = buffers.workspace();
  row.workspace_measured =
      need_u64(need(memory, "workspace", where + ".memory"), "current", where + ".memory.workspace");
  const u64 messages = row.formula.messages, total = row.formula.total();
  row.totals_match = times_equals(messages, steps, row.sends) && times_equals(messages, steps, row.receives) &&
                     times_equals(messages * row.message_elements, steps, row.sent_elements) &&
                     times_equals(messages * row.message_elements, steps, row.received_elements) &&
                     times_equals(total, steps, row.sent) && times_equals(total, steps, row.received);
  row.match = row.totals_match && row.bad_records.empty() && row.buffer_measured == row.buffer_formula &&
              row.workspace_measured >= row.workspace_floor;
  return row;
}

}  // namespace shardlab::plan
