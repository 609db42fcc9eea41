// Lab 10 — Megatron's f and g: your megatron_fg.cpp (the task: LAB_README.md; the contract, with f's forward and
// g's backward already there as the identities they are: src/parallel/megatron_fg.h). Write the two that
// communicate. tp_all_reduce(tp, buf, n) (src/parallel/tp_collectives.h) sums buf over the tp ranks, in place.
// Sequence parallelism's pieces below are lab 11's; leave them as they are here.
// Grade it: make lab LAB=10 SOLUTION=<this file>
#include "parallel/megatron_fg.h"

#include "core/not_written.h"
#include "parallel/tp_collectives.h"

namespace shardlab {

template <class T>
void copy_to_tp_region_backward(Communicator& tp, T* dx, size_t n) {
  not_written_yet("copy_to_tp_region_backward (f's backward)");
}

template <class T>
void reduce_from_tp_region(Communicator& tp, T* z, size_t n) {
  not_written_yet("reduce_from_tp_region (g's forward)");
}

template <class T>
void gather_from_sequence_region(Communicator& tp, const T* x_local, T* x_full, T* packed, int B, int T_local, int C) {
  sequence_all_gather(tp, x_local, x_full, packed, B, T_local, C);
}
template <class T>
void gather_from_sequence_region_backward(Communicator& tp, const T* dx_full, T* dx_local, T* packed, int B,
                                          int T_local, int C) {
  sequence_reduce_scatter(tp, dx_full, dx_local, packed, B, T_local, C);
}

template <class T>
void scatter_to_sequence_region(Communicator& tp, const T* z_full, T* z_local, T* packed, int B, int T_local, int C) {
  sequence_reduce_scatter(tp, z_full, z_local, packed, B, T_local, C);
}
template <class T>
void scatter_to_sequence_region_backward(Communicator& tp, const T* dz_local, T* dz_full, T* packed, int B, int T_local,
                                         int C) {
  sequence_all_gather(tp, dz_local, dz_full, packed, B, T_local, C);
}

#define SHARDLAB_FG(T)                                                                                   \
  template void copy_to_tp_region_backward<T>(Communicator&, T*, size_t);                                \
  template void reduce_from_tp_region<T>(Communicator&, T*, size_t);                                     \
  template void gather_from_sequence_region<T>(Communicator&, const T*, T*, T*, int, int, int);          \
  template void gather_from_sequence_region_backward<T>(Communicator&, const T*, T*, T*, int, int, int); \
  template void scatter_to_sequence_region<T>(Communicator&, const T*, T*, T*, int, int, int);           \
  template void scatter_to_sequence_region_backward<T>(Communicator&, const T*, T*, T*, int, int, int);
SHARDLAB_FG(float)
SHARDLAB_FG(double)
#undef SHARDLAB_FG

}  // namespace shardlab
