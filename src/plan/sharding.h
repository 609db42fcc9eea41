// plan/sharding.h — who holds what under data parallelism (§2.4.3–2.4.5, claims C11–C14): DP, ZeRO-1,
// ZeRO-2, ZeRO-3 and FSDP's strategies (no_shard = DP, grad_op = ZeRO-2, full = ZeRO-3, hybrid = full
// shard inside a node, replicate across nodes). Gives the shard group G, the shard S = ceil(Ψ/G), the
// padded flat-buffer size Ψ_pad = G·S, and the exact per-rank model-state bytes by category — the
// trainer's rules, so its memory ledger can be compared to the byte.
//
// Legend: Ψ parameters, N data-parallel ranks, K ranks per node, M = N/K nodes, G shard group
// (N, or K for hybrid), S shard size, A micro-batches per optimizer step.
//
// Leaves out: communication (plan/comm_volume.h), activations (unchanged by DP/ZeRO/FSDP, claim C16),
// FSDP's transient buffers — a gathered unit's weights (booked as param) and a unit's gradients on their
// way to the shards (grad, or workspace in bf16) live only while the unit computes, so they raise the
// peak but not the model states at rest that these formulas give — TP/PP/EP sharding, and ZeRO++/offload.
#pragma once

#include <cstdint>
#include <string>

#include "optim/shard_layout.h"
#include "optim/strategy.h"
#include "plan/state_bytes.h"

namespace shardlab::plan {

// The strategies themselves (names, what each shards) are the engine's: optim/strategy.h.

// One data-parallel layout.
struct Layout {
  Strategy strategy = Strategy::dp;
  std::uint64_t dp = 1;              // N
  std::uint64_t ranks_per_node = 0;  // K; 0 = every rank on one node
  std::uint64_t accum = 1;           // A, micro-batches per optimizer step
  bool exact = false;                // --exact: gradients reduced once per step as 32-byte order-free sums
  std::uint64_t exact_scalars = 1;   // --exact: one-element sums all-reduced over dp each step (the loss; with
                                     // experts also the two router losses)
  // Context-parallel ranks inside N (N = dp·cp, the gradient group): the exact mode's loss sum merges over cp on
  // its own axis, then over the N/cp dp ranks (parallel/grid_sums.cpp).
  std::uint64_t cp = 1;
};

// "" if the layout is usable, else one line saying why (N, A ≥ 1; hybrid needs K ≥ 1 dividing N).
std::string layout_error(const Layout& l);
std::uint64_t ranks_per_node(const Layout& l);               // K, or N when not given
std::uint64_t num_nodes(const Layout& l);                    // M = ceil(N / K)
std::uint64_t node_of(const Layout& l, std::uint64_t rank);  // rank / K: nodes of K consecutive ranks

// The shard geometry of the layout (the engine's own, optim/shard_layout.h): group G = N (dp,
// zero1-3) or K (hybrid), shard S = ceil(Ψ / G), padded Ψ_pad = G·S (Ψ when G = 1).
ShardLayout shard_layout(const Layout& l, std::uint64_t psi);

// Per-rank bytes: bytes_per_param(r)[c] × (is_sharded ? S : Ψ_pad). Same on every rank.
// The C1 recipe: ZeRO-1 4Ψ + 12Ψ/N, ZeRO-2 2Ψ + 14Ψ/N, ZeRO-3 16Ψ/N (claims C12, C13).
PerCategory per_rank_model_state_bytes(const Recipe& r, std::uint64_t psi, const Layout& l);

// N → ∞ (claim C13): the unsharded categories × Ψ; ZeRO-3 → 0, DP stays at the full total (C11).
PerCategory model_state_floor_bytes(const Recipe& r, std::uint64_t psi, Strategy s);

// The per-rank formula in words for a recipe, e.g. "4Ψ + 12Ψ/N" (ZeRO-1, C1 recipe); hybrid uses K.
std::string model_state_formula(const Recipe& r, Strategy s);

}  // namespace shardlab::plan
