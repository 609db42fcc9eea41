// A mixture-of-experts router (claim C25) as a forward/backward pair: which experts each token goes to, with
// which weight, and the two router losses. For R token rows x (R, C) and the router's weight Wr (E, C):
//   logits = x·Wrᵀ;  p = softmax(logits);  the token's k slots are its k largest p (ties: the lower expert
//   index first), in that order;  gate_j = p_j / Σ_{m in the k} p_m  (renormalised over the chosen k).
// Routing groups: the rows come in groups of `group` consecutive rows (one sample's tokens in the model), and
// capacity and the load-balancing loss are per group — so a layout that splits the batch by samples (data,
// expert and pipeline parallelism, micro-batches) routes every sample exactly as one process does.
// Capacity (capacity > 0): in each group, expert e computes at most `capacity` slots, the first ones by token
// position (then slot); a slot past it is dropped — it contributes nothing (the residual carries the token) —
// and counted.
// Losses, each its own number (the caller weights and adds them):
//   load balance, per group g (Switch, Fedus et al. 2021, eq. 4, with top-k slots as in GShard; per sequence as
//     DeepSeek-V3's sequence-wise balance loss):  E · Σ_i f_i · P_i, with f_i = (the group's slots routed to
//     expert i, before capacity) / (group·k) — a count: no gradient flows through it — and P_i = the mean of
//     p_i over the group's rows; `aux` is the sum over the groups;
//   router z-loss (ST-MoE, Zoph et al. 2022, eq. 5):  logsumexp(logits)² per row; `z` is the sum over the rows.
// Backward: the gates' gradient (from the combine) through the renormalisation and the softmax, plus the two
// losses' gradients (weighted by the caller), into d_logits, then Wr and x.
// The exact mode (split.exact, model/row_split.h): the router's products one sample (routing group) at a time, its
// weight's gradient into each sample's own copy (split.grad_of), and the two losses also kept as order-free sums
// (aux_terms: each group's load-balancing loss; z_terms: each row's lse²) that the layout adds over ranks.
// Storage: every array the router keeps is allocated through the memory ledger as an activation item
// (block.moe.*), so the MoE's activations are measured like every other saved tensor.
// Leaves out: noisy top-k and random or expert-choice routing (deterministic, by position, as every layout
// must draw the same routing).
#pragma once
#include <cstdint>

#include "core/exact_sum.h"
#include "core/ledger.h"
#include "model/row_split.h"

namespace shardlab {

struct MoeDims {
  int R = 0;         // token rows
  int C = 0;         // hidden size
  int E = 0;         // experts
  int k = 1;         // slots per token
  int capacity = 0;  // slots per expert per group kept (0: dropless)
  int group = 0;     // rows per routing group (0: all R rows are one group)
  int G() const { return R / rows_per_group(); }
  int rows_per_group() const { return group > 0 ? group : R; }
};

// What the router decided for R rows; forward fills it, backward reads it. A slot is s = t·k + j (token t's
// j-th choice). The kept slots are listed expert by expert, each expert's in token order: `list`.
template <class T>
struct MoeRouting {
  Buffer<T> probs;         // (R, E) softmax of the logits
  Buffer<T> lse;           // (R) logsumexp of each row's logits
  Buffer<T> gate;          // (R, k) renormalised gates
  Buffer<int32_t> slots;   // 3 arrays of R·k: each slot's expert; its row in the list (−1: dropped); the list
  Buffer<int32_t> counts;  // (G, E) slots routed per group and expert, before capacity; then first (E + 1)
  int R = 0, E = 0, k = 0, G = 0;
  int kept = 0;                 // slots in the list
  int dropped = 0;              // slots capacity dropped
  double aux = 0, z = 0;        // Σ over groups of the load-balancing loss, Σ over rows of lse² (unweighted)
  ExactSum aux_terms, z_terms;  // the same sums, order-free (each group's loss, each row's lse²)
  int32_t* expert() { return slots.data(); }
  const int32_t* expert() const { return slots.data(); }
  int32_t* row() { return slots.data() + size_t(R) * k; }
  const int32_t* row() const { return slots.data() + size_t(R) * k; }
  int32_t* list() { return slots.data() + 2 * size_t(R) * k; }
  const int32_t* list() const { return slots.data() + 2 * size_t(R) * k; }
  const int32_t* routed(int g) const { return counts.data() + size_t(g) * E; }
  // Expert e computes list entries [first(e), first(e + 1)).
  int first(int e) const { return counts.data()[size_t(G) * E + e]; }
  void release() {
    for (Buffer<T>* b : {&probs, &lse, &gate}) b->reset();
    slots.reset();
    counts.reset();
  }
};

// logits scratch (R, E). Fills r (allocating through the ledger) from x (R, C) and the router weight wr (E, C).
template <class T>
void moe_route(MoeRouting<T>& r, T* logits, const T* x, const T* wr, const MoeDims& d, MemoryLedger& ledger,
               RowSplit split = {});

// d_gate (R, k): the gradient of the objective with respect to each slot's gate (0 for dropped slots).
// aux_weight: the weight of each group's load-balancing loss, z_weight: of each row's lse². d_logits scratch
// (R, E). Writes d_x (R, C) (overwritten) and accumulates the router weight's gradient into d_wr (E, C).
template <class T>
void moe_route_backward(T* d_x, T* d_wr, T* d_logits, const T* d_gate, const MoeRouting<T>& r, const T* x, const T* wr,
                        const MoeDims& d, T aux_weight, T z_weight, RowSplit split = {});

}  // namespace shardlab
