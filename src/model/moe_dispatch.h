// The textbook piece of a mixture-of-experts layer's data movement (claim C25), a seam of its own (lab 15): where
// each routed slot's row goes, how the rows are laid out for the all-to-alls and for the experts, and how the
// experts' outputs come back into each token — with each backward beside its forward.
//   dispatch_rows        the kept slots' rows in the router's list order (expert by expert, each expert's slots in
//                        token order), gathered from the tokens' rows;
//   rows_per_rank        how many of those rows go to each ep rank: rank j holds experts [j·E/P, (j+1)·E/P), so
//                        its rows are one contiguous run of the list;
//   rows_from_sources    how many rows arrive from each rank (the receive side of the same all-to-all(v));
//   arrival_to_experts   an all-to-all delivers rows source by source (each source's expert by expert); the
//                        experts want them expert by expert (each expert's source by source), so that one GEMM
//                        pair per expert covers every row it was sent — and experts_to_arrival undoes it;
//   combine_rows         out[t] = Σ over token t's slots j, in slot order, of gate_j · y[slot j]; a dropped slot
//                        adds nothing. The fixed order makes the sum the single process's on every layout.
// Used by model/moe.cpp (every layout) and parallel/expert_parallel.cpp (the ep all-to-alls).
#pragma once
#include <cstdint>
#include <vector>

#include "model/expert_exchange.h"
#include "model/moe_routing.h"

namespace shardlab {

// xs (kept, C): row q is the row of x (R, C) that the list's q-th slot belongs to.
template <class T>
void dispatch_rows(T* xs, const T* x, const MoeRouting<T>& r, int C);
// Backward: each slot row's gradient d_xs (kept, C) added into its token's row of d_x, in the list's order.
template <class T>
void dispatch_rows_backward(T* d_x, const T* d_xs, const MoeRouting<T>& r, int C);

// kept_per_expert (E): the kept slots of each expert. Rows for each of `ranks` ranks.
std::vector<int> rows_per_rank(const int* kept_per_expert, int E, int ranks);
// The rows each source rank sends to this rank: Σ over this rank's experts of rows.from(s, e).
std::vector<int> rows_from_sources(const ExpertRows& rows);

// arrived (m, C) in arrival order → expert_rows (m, C) in the experts' order; and back.
template <class T>
void arrival_to_experts(T* expert_rows, const T* arrived, const ExpertRows& rows, int C);
template <class T>
void experts_to_arrival(T* arrived, const T* expert_rows, const ExpertRows& rows, int C);

// out (R, C) from the kept slots' outputs slot_out (kept, C), in the list's order, and the gates.
template <class T>
void combine_rows(T* out, const T* slot_out, const MoeRouting<T>& r, int C);
// Backward: d_slot (kept, C) = gate · d_out of the slot's token; d_gate (R·k, zeroed by the caller) = d_out · y.
template <class T>
void combine_rows_backward(T* d_slot, T* d_gate, const T* d_out, const T* slot_out, const MoeRouting<T>& r, int C);

}  // namespace shardlab
