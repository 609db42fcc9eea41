// Megatron's conjugate pieces (claims C17, C23), alone in one file so that another implementation can take
// their place (a seam: `make seam SEAM=src/parallel/megatron_fg.cpp WITH=FILE`, docs/architecture.md). Why
// they are what they are — column- and row-parallel GEMMs, the regions of a block — is tensor_parallel.h's
// header; the collectives they use are tp_collectives.h's. Each is bypassed when t = 1.
#pragma once
#include <cstddef>

#include "comm/communicator.h"

namespace shardlab {

// ---- The conjugate pair, forward and backward side by side (n elements of the (b, s, h) tensor).
// f = copy_to_tp_region. Forward Y = X on every rank: each column-parallel GEMM X·A_iᵀ reads the whole X.
// Backward dX = Σ_i dX_i: every rank's partial input gradient dY_i·A_i, summed.
template <class T>
const T* copy_to_tp_region(const T* x) {
  return x;
}
template <class T>
void copy_to_tp_region_backward(Communicator& tp, T* dx, size_t n);
// g = reduce_from_tp_region. Forward Z = Σ_i Y_i·B_iᵀ: every rank's row-parallel partial sums, summed.
// Backward dZ_i = dZ on every rank: each partial's gradient is the whole output gradient.
template <class T>
void reduce_from_tp_region(Communicator& tp, T* z, size_t n);
template <class T>
const T* reduce_from_tp_region_backward(const T* dz) {
  return dz;
}
// With sequence parallelism (shapes (B, T/t, C) outside a region, (B, T, C) inside):
// gather_from_sequence_region. Forward X = [X_0; …; X_{t−1}] along s. Backward dX_r = rows r of Σ_i dX_i.
template <class T>
void gather_from_sequence_region(Communicator& tp, const T* x_local, T* x_full, T* packed, int B, int T_local, int C);
template <class T>
void gather_from_sequence_region_backward(Communicator& tp, const T* dx_full, T* dx_local, T* packed, int B,
                                          int T_local, int C);
// scatter_to_sequence_region. Forward Z_r = rows r of Σ_i Z_i. Backward dZ = [dZ_0; …; dZ_{t−1}] along s.
template <class T>
void scatter_to_sequence_region(Communicator& tp, const T* z_full, T* z_local, T* packed, int B, int T_local, int C);
template <class T>
void scatter_to_sequence_region_backward(Communicator& tp, const T* dz_local, T* dz_full, T* packed, int B, int T_local,
                                         int C);

}  // namespace shardlab
