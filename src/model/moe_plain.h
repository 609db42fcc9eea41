// A mixture-of-experts layer written the plain way, token by token (claim C25): for each token t and each of its
// kept slots j, in slot order, the slot's expert runs on the token's row alone and out[t] += gate_j · y_j; the
// backward walks the same loop, recomputing each slot's expert. No list, no dispatch, no regrouping, no exchange:
// the second implementation that `shardlab moe-layer` checks one process's moe_forward/moe_backward (model/moe.h,
// and through it model/moe_dispatch.cpp) against. The routing is given (model/moe_routing.h's moe_route), the
// weights are all E experts' (MoeWeights with local = E). One small GEMM per slot: for checks, not for training.
#pragma once
#include "model/moe.h"
#include "model/moe_routing.h"

namespace shardlab {

// out (R, C) from x (R, C) as routed in r; F: each expert's width.
template <class T>
void moe_plain_forward(T* out, const MoeRouting<T>& r, const T* x, const MoeWeights<const T*>& w, int C, int F);

// d_x (R, C) overwritten; g: all E experts' gradients and the router's, accumulated. aux_weight and z_weight as in
// moe_backward.
template <class T>
void moe_plain_backward(T* d_x, const MoeWeights<T*>& g, const T* d_out, const MoeRouting<T>& r, const T* x,
                        const MoeWeights<const T*>& w, const MoeDims& d, int F, T aux_weight, T z_weight);

}  // namespace shardlab
