// Lab 11 — sequence parallelism: your megatron_fg.cpp (the task: LAB_README.md; the contract:
// src/parallel/megatron_fg.h). f and g (lab 10) are written; write the four pieces of sequence parallelism.
// The tools (src/parallel/tp_collectives.h): sequence_all_gather(tp, x_local, x_full, packed, B, T_local, C)
// and sequence_reduce_scatter(tp, x_full, x_local, packed, B, T_local, C) move (B, T, C) tensors cut along T.
// Grade it: make lab LAB=11 SOLUTION=<this file>
#include "parallel/megatron_fg.h"

#include "core/not_written.h"
#include "parallel/tp_collectives.h"

namespace shardlab {

template <class T>
void copy_to_tp_region_backward(Communicator& tp, T* dx, size_t n) {
  tp_all_reduce(tp, dx, n);
}

template <class T>
void reduce_from_tp_region(Communicator& tp, T* z, size_t n) {
  tp_all_reduce(tp, z, n);
}

template <class T>
void gather_from_sequence_region(Communicator& tp, const T* x_local, T* x_full, T* packed, int B, int T_local, int C) {
  not_written_yet("gather_from_sequence_region");
}
template <class T>
void gather_from_sequence_region_backward(Communicator& tp, const T* dx_full, T* dx_local, T* packed, int B,
                                          int T_local, int C) {
  not_written_yet("gather_from_sequence_region_backward");
}

template <class T>
void scatter_to_sequence_region(Communicator& tp, const T* z_full, T* z_local, T* packed, int B, int T_local, int C) {
  not_written_yet("scatter_to_sequence_region");
}
template <class T>
void scatter_to_sequence_region_backward(Communicator& tp, const T* dz_local, T* dz_full, T* packed, int B, int T_local,
                                         int C) {
  not_written_yet("scatter_to_sequence_region_backward");
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
