// A mixture-of-experts MLP (claim C25) as a forward/backward pair: the router (moe_routing.h) sends each of R
// token rows to k of E experts; every expert is the block's MLP, h → F → h with GELU, with weights of its own:
//   dispatch  the kept slots' rows, expert by expert, each expert's in token order (the router's list), handed
//             to the experts through the exchange (expert_exchange.h: in place on one process, all-to-alls
//             between the ep ranks);
//   experts   y = gelu(x·W1_eᵀ + b1_e)·W2_eᵀ + b2_e, on the rows of each expert this rank holds;
//   combine   the outputs back in the list's order, then out[t] = Σ over the token's slots j, in slot order, of
//             gate_j · y[slot j] (a dropped slot adds nothing) — a fixed order, so every layout adds the same
//             numbers the same way.
// Weights: the router Wr (E, C) and this rank's experts: W1 (El, F, C), b1 (El, F), W2 (El, C, F), b2 (El, C),
// each expert's block contiguous. Backward overwrites d_x and accumulates into the weight gradients.
// The exact mode (split.exact, model/row_split.h): the router runs one sample at a time (moe_routing.h), and since
// an expert's rows come from many samples, in an order and grouping the layout decides, every expert product runs
// one row at a time and each row's weight gradients go straight into the experts' order-free sums
// (moe_experts_exact.h).
// Storage: what forward keeps (the routing, the experts' input rows and hidden activations, the slots'
// outputs) is allocated through the memory ledger as activation items block.moe.*; the backward's
// temporaries as workspace.
#pragma once
#include "core/ledger.h"
#include "model/expert_exchange.h"
#include "model/moe_routing.h"

namespace shardlab {

template <class P>
struct MoeWeights {
  P wr, w1, b1, w2, b2;  // router (E, C); this rank's experts as above
};

// The layer's dimensions on this rank.
struct MoeShape {
  MoeDims d;             // rows, hidden, experts, k, capacity, group
  int F = 0;             // each expert's width
  int first_expert = 0;  // this rank's experts: [first_expert, first_expert + local)
  int local = 0;
  RowSplit split;  // the router's products: one GEMM, or one per sample (the exact mode)
};

// What forward keeps for backward.
template <class T>
struct MoeRecord {
  MoeRouting<T> routing;
  ExpertRows rows;                // which rows this rank's experts computed, from where
  Buffer<T> expert_in, pre, act;  // (m, C), (m, F), (m, F): the experts' side
  Buffer<T> slot_out;             // (n, C): each kept slot's expert output, in the list's order
  bool exists() const { return routing.probs.size() > 0; }
  void release() {
    routing.release();
    for (Buffer<T>* b : {&expert_in, &pre, &act, &slot_out}) b->reset();
  }
};

// out (R, C) from x (R, C).
template <class T>
void moe_forward(T* out, MoeRecord<T>& rec, const T* x, const MoeWeights<const T*>& w, const MoeShape& s,
                 ExpertExchange<T>& exchange, MemoryLedger& ledger);

// d_x (R, C) overwritten from d_out (R, C); g: the weights' gradients, accumulated. aux_weight: each routing
// group's load-balancing loss's weight in the objective; z_weight: each row's lse²'s. sums (the exact mode, else
// null): the experts' order-free gradient sums, which take their gradients instead of g.
template <class T>
void moe_backward(T* d_x, const MoeWeights<T*>& g, const T* d_out, const MoeRecord<T>& rec, const T* x,
                  const MoeWeights<const T*>& w, const MoeShape& s, T aux_weight, T z_weight,
                  ExpertExchange<T>& exchange, MemoryLedger& ledger, const MoeWeights<ExactSum*>* sums = nullptr);

}  // namespace shardlab
