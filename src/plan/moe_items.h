// plan/moe_items.h — a mixture-of-experts block's saved tensors (claim C25), item by item, and the activation peak
// of records whose sizes change from micro-batch to micro-batch (the experts' rows follow the routing).
//
// Legend (plan/activation_items.h's, plus): E experts, k slots per token, F each expert's width, R = s·b token rows
// of the micro-batch on this rank, n kept slots, m rows this rank's experts computed. The router's arrays and the
// experts' rows stay in the compute type (w_s bytes: 4, or 8 in f64) even with --mixed bf16; int32 arrays are 4 B.
//   block.moe.probs      R·E · w_s          the router's softmax
//   block.moe.lse        R · w_s            each row's logsumexp (the z-loss's)
//   block.moe.gates      R·k · w_s          the gates, renormalised over the k chosen
//   block.moe.slots      3·R·k · 4          each slot's expert, its row in the list, the list
//   block.moe.counts     (b·E + E + 1) · 4  slots per routing group (a sample) and expert; each expert's first row
//   block.moe.expert_in  m·C · w_s          the rows this rank's experts computed
//   block.moe.pre        m·F · w_s          their fc output
//   block.moe.act        m·F · w_s          GELU of it
//   block.moe.slot_out   n·C · w_s          each kept slot's expert output
// and no block.fc or block.gelu. Dropless on one process n = m = R·k, whatever the routing; with a capacity
// n = m ≤ R·k and with expert parallelism m is what the ep ranks sent: both are the routing's (a run records
// them). A zero-row array is never allocated (no ledger allocation).
//
// Leaves out: the layer's transient buffers (workspace: logits, dispatched rows, backward's gradients).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "parallel/schedule.h"
#include "plan/activation_items.h"

namespace shardlab::plan {

// The rows one MoE block's forward allocated for on one rank.
struct MoeRows {
  std::uint64_t kept = 0;      // n: the kept slots (block.moe.slot_out)
  std::uint64_t received = 0;  // m: the rows this rank's experts computed (block.moe.expert_in, pre, act)
  std::uint64_t own = 0;       // of those, from this rank's own slots (never on the wire)
};

std::uint64_t moe_routed_slots(const ActivationShape& s);  // R·k
MoeRows dropless_rows(const ActivationShape& s);           // n = m = own = R·k (one process, no capacity)

// Every tensor a MoE block allocates for one micro-batch with rows r, in the block's order (the dense block's up to
// LN2's statistics, then the MoE's).
std::vector<ActivationItem> moe_block_items(const ActivationShape& s, const MoeRows& r);
bool is_moe_item(const std::string& name);  // "block.moe.…"

// One micro-batch's records on a chunk of blocks: block.x (each block's input), the rest of each block's record,
// and — when the chunk holds the head — head.x and the rest of the head's record.
struct ChunkRecords {
  std::uint64_t x = 0;
  std::vector<std::uint64_t> rest;
  bool head = false;
  std::uint64_t head_x = 0, head_rest = 0;
};
using RecordsOf = std::function<ChunkRecords(int micro_batch, int chunk)>;

// The activation peak of one step of a stage running `actions` (its schedule, parallel/schedule.h) from nothing
// alive, records(micro-batch, chunk) as ModelChunk allocates and frees them: plan/pipeline_stages.h's walk with
// each record its own size.
std::uint64_t records_peak(const StageActions& actions, bool full_recompute, const RecordsOf& records);

// The same walk for several parts of the records at once (e.g. each item apart, and their sum): every field a
// vector of the parts' bytes; returns each part's peak.
struct PartRecords {
  std::vector<std::uint64_t> x;
  std::vector<std::vector<std::uint64_t>> rest;
  bool head = false;
  std::vector<std::uint64_t> head_x, head_rest;
};
std::vector<std::uint64_t> part_peaks(const StageActions& actions, bool full_recompute, std::size_t parts,
                                      const std::function<const PartRecords&(int micro_batch, int chunk)>& records);
// One forward whose records are dropped after it (evaluation): its peak.
std::uint64_t forward_peak(const ChunkRecords& r, bool full_recompute);
// One micro-batch through the whole model, forward then backward, every MoE block dropless on one process (n = m =
// s·b·k): plan/activation_items.h's activation_peak with s.moe's blocks.
std::uint64_t moe_model_activation_peak(const ActivationShape& s);

}  // namespace shardlab::plan
