// check/moe_check.h — a mixture-of-experts run's ledger against the formulas (claim C25), exactly.
//
// What the run recorded and the check reads (train/moe_load.h): ledger.json's "moe" section (E, k, which blocks, F,
// the capacity in slots per sample, ep) and each rank's "moe.forwards": per model chunk its MoE layers and, for every
// forward, each MoE block's rows — n kept slots, m rows its experts computed, o of them its own (plan/moe_items.h).
// Dropless on one process (and over dp) n = m = o = s·b·k by the formula, and the recorded rows must say the same;
// with a capacity or expert parallelism n and m are the routing's, taken from the recorded rows.
//
// Per rank, with expert parallelism (layout.ep > 1): every all-to-all on axis ep against plan/ep_bytes.h — the
// totals per purpose over the run (calls, elements, bytes sent and received; bytes only with ring collectives: MPI's
// are not observable) and every kept call record in call order (the schedule's forwards and backwards, each MoE
// block's counts / dispatch / combine), a wrong one named with its step, micro-batch, layer and direction; and the
// rank's own tallies of exchanged rows (moe.dispatches, …) against the same rows.
//
// Leaves out: evaluation's exchanges (comm_eval), the loss's scalar sums on ep.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan/ep_bytes.h"
#include "plan/moe_items.h"

namespace shardlab::plan {

// One model chunk's recorded rows on a rank.
struct ChunkRows {
  std::vector<int> layers;                  // its MoE blocks
  std::vector<std::vector<MoeRows>> train;  // per training forward, in order: per MoE block
  std::vector<std::uint64_t> eval_samples;  // per evaluation forward
  std::vector<std::vector<MoeRows>> eval;   // its rows
};
// rank.moe.forwards: one entry per chunk of the stage; `layers` must be each chunk's MoE blocks.
std::vector<ChunkRows> read_moe_rows(const nlohmann::json& rank, const std::vector<std::vector<int>>& layers,
                                     std::uint64_t train_forwards, const std::string& where);

// One purpose's all-to-alls of a rank over the run.
struct EpPurposeRow {
  std::string purpose;
  std::uint64_t calls = 0, elements = 0, sent = 0, received = 0;  // the formula's
  std::uint64_t calls_measured = 0, elements_measured = 0, sent_measured = 0, received_measured = 0;
  bool match = false;
};

struct EpRow {
  std::vector<EpPurposeRow> purposes;     // moe_counts, moe_dispatch, moe_combine
  std::uint64_t records_checked = 0;      // kept call records compared one by one
  std::vector<std::string> bad_records;   // "moe_dispatch #17 (step 2, micro-batch 0, layer 1, forward): …"
  std::vector<std::string> bad_tallies;   // the rank's moe.* tallies that disagree with its rows
  std::uint64_t sent = 0, sent_even = 0;  // bytes over the run: the formula's, and at an even load
  bool match = false;
};

// The calls one rank makes over the run, in order, each with where it belongs.
struct EpCall {
  AllToAll call;
  MoeRows rows;       // the block's rows it moves (counts: none)
  std::string where;  // "step 2, micro-batch 0, layer 1, forward"
};
struct EpRankShape {
  std::uint64_t hidden = 0, elem_bytes = 4, experts = 0, ep = 1, top_k = 2, tokens = 0;  // tokens: s·b
  bool full_recompute = false;
  std::uint64_t steps = 0, accum = 1;
};
// actions: the stage's schedule for one step (parallel/schedule.h).
std::vector<EpCall> ep_run_calls(const EpRankShape& s, const StageActions& actions, const std::vector<ChunkRows>& rows);

// bytes: whether the ledger's byte counts are observable (ring collectives).
EpRow check_ep_rank(const nlohmann::json& rank, const EpRankShape& s, const std::vector<EpCall>& calls, bool bytes,
                    const std::string& where);

}  // namespace shardlab::plan
