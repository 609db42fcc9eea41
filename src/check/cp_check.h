// check/cp_check.h — one rank of a context-parallel run's ledger against plan/cp_bytes.h (claim C24), exactly:
// the point-to-point messages it sent and received on axis "cp" over the run (ops "send" and "recv"; ring
// attention's, purpose "ring_attention", are the only ones there) — count, elements and bytes against
// L·A·steps × the layer's messages — every kept call record one message of 2·b·(s/c)·(h/t) elements, and the
// ring's comm_buffer still held at the end of the run (the five message buffers; nothing else holds comm_buffer
// between steps).
//
// Leaves out: the workspace (the ring's running sum and scratch sit beside the chunk's compute buffers, which are
// not a formula: only bounded from below), evaluation's rings (comm_eval) and the trace's overlap.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan/cp_bytes.h"

namespace shardlab::plan {

struct CpRow {
  CpStepBytes formula;              // per step (plan/cp_bytes.h)
  std::uint64_t blocks = 0;         // L: the blocks the rank runs
  std::uint64_t message_bytes = 0;  // one message, by the formula
  std::uint64_t message_elements = 0;
  std::uint64_t sent = 0, received = 0;   // bytes over the run, comm.totals
  std::uint64_t sends = 0, receives = 0;  // calls over the run
  std::uint64_t sent_elements = 0, received_elements = 0;
  std::vector<std::string> bad_records;                       // kept call records that are not one message
  std::uint64_t buffer_formula = 0, buffer_measured = 0;      // comm_buffer current at the end of the run
  std::uint64_t workspace_floor = 0, workspace_measured = 0;  // the ring's workspace ≤ workspace current
  bool totals_match = false;                                  // calls, elements and bytes sent and received
  bool match = false;  // the totals, every record, the comm_buffer and the workspace floor
};

// rank: one entry of the ledger's "ranks"; shape: the rank's blocks and the run's A; steps: the run's.
CpRow check_cp_rank(const nlohmann::json& rank, const CpShape& shape, std::uint64_t steps, const std::string& where);

}  // namespace shardlab::plan
