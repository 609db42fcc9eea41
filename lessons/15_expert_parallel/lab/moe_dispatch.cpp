// Lab 15 — expert parallelism's dispatch and combine: your moe_dispatch.cpp (the task: LAB_README.md; the contract:
// src/model/moe_dispatch.h, the routing it reads: src/model/moe_routing.h). model/moe.cpp calls these functions on
// every layout; parallel/expert_parallel.cpp sends what they lay out through its all-to-alls on the ep axis.
// A slot is s = t·k + j (token t's j-th choice); r.expert()[s] is its expert, r.row()[s] its place in the list
// (−1: dropped by capacity), r.list()[q] the slot at the list's place q (r.kept places), r.gate[s] its gate.
// Grade it: make lab LAB=15 SOLUTION=<this file>
#include "model/moe_dispatch.h"

#include <cstring>

#include "core/not_written.h"
#include "model/linear.h"

namespace shardlab {

// xs (kept, C): the list's q-th row is its slot's token's row of x (R, C). A plain copy: std::memcpy.
template <class T>
void dispatch_rows(T* xs, const T* x, const MoeRouting<T>& routing, int C) {
  not_written_yet("dispatch_rows");
}

// The same map backward: each list row's gradient ADDED into its token's row of d_x (a token with k kept slots
// gets k additions). VecMap<T>(p, C) views C values as a row vector (model/linear.h): += works on it.
template <class T>
void dispatch_rows_backward(T* d_x, const T* d_xs, const MoeRouting<T>& routing, int C) {
  not_written_yet("dispatch_rows_backward");
}

// Rank j of `ranks` holds experts [j·E/ranks, (j+1)·E/ranks). How many of the list's rows go to each rank?
std::vector<int> rows_per_rank(const int* kept, int E, int ranks) { not_written_yet("rows_per_rank"); }

// The receive side: how many rows arrive from each source rank (all of this rank's experts together).
std::vector<int> rows_from_sources(const ExpertRows& expert_rows) { not_written_yet("rows_from_sources"); }

// arrived (m, C) holds the rows source by source, each source's expert by expert; expert_order (m, C) wants them
// expert by expert, each expert's source by source. rows.from(s, e): the rows source s sent local expert e.
template <class T>
void arrival_to_experts(T* expert_order, const T* arrived, const ExpertRows& rows, int C) {
  not_written_yet("arrival_to_experts");
}

// The inverse permutation: the experts' rows (expert_rows) back to arrival order (arrival_order), so that the
// combine's all-to-all returns each source its rows in the order it sent them.
template <class T>
void experts_to_arrival(T* arrival_order, const T* expert_rows, const ExpertRows& rows, int C) {
  not_written_yet("experts_to_arrival");
}

// out (R, C) = for each token, the sum over its slots j = 0, 1, …, k−1 in that order of gate · that slot's output
// row (slot_out is in the list's order); a dropped slot adds nothing. Every row of out is written.
template <class T>
void combine_rows(T* out, const T* slot_out, const MoeRouting<T>& routing, int C) {
  not_written_yet("combine_rows");
}

// Backward of the combine, for each kept slot: d_slot (its list row) = gate · d_out of its token, and
// d_gate[s] = d_out of its token · the slot's output row (a dot product). d_gate was zeroed by the caller.
template <class T>
void combine_rows_backward(T* d_slot, T* d_gate, const T* d_out, const T* slot_out, const MoeRouting<T>& routing,
                           int C) {
  not_written_yet("combine_rows_backward");
}

template void dispatch_rows<float>(float*, const float*, const MoeRouting<float>&, int);
template void dispatch_rows_backward<float>(float*, const float*, const MoeRouting<float>&, int);
template void arrival_to_experts<float>(float*, const float*, const ExpertRows&, int);
template void experts_to_arrival<float>(float*, const float*, const ExpertRows&, int);
template void combine_rows<float>(float*, const float*, const MoeRouting<float>&, int);
template void combine_rows_backward<float>(float*, float*, const float*, const float*, const MoeRouting<float>&, int);
template void dispatch_rows<double>(double*, const double*, const MoeRouting<double>&, int);
template void dispatch_rows_backward<double>(double*, const double*, const MoeRouting<double>&, int);
template void arrival_to_experts<double>(double*, const double*, const ExpertRows&, int);
template void experts_to_arrival<double>(double*, const double*, const ExpertRows&, int);
template void combine_rows<double>(double*, const double*, const MoeRouting<double>&, int);
template void combine_rows_backward<double>(double*, double*, const double*, const double*, const MoeRouting<double>&,
                                            int);

}  // namespace shardlab
