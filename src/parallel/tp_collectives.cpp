// The collectives under Megatron's pieces: the all-reduce over tp and the sequence all-gather / reduce-scatter
// with their rank-major packing (see tp_collectives.h).
#include "parallel/tp_collectives.h"

#include <cstring>
#include <vector>

namespace shardlab {

namespace {

// (B, T, C) with T = t·T_local, as t rank-major blocks of (B, T_local, C): block r holds positions
// [r·T_local, (r+1)·T_local) of every sample — the order in which each rank's shard is contiguous.
template <class T>
void pack_by_rank(const T* full, T* packed, int B, int T_local, int C, int t) {
  const size_t piece = size_t(T_local) * C;
  for (int r = 0; r < t; ++r)
    for (int b = 0; b < B; ++b)
      std::memcpy(packed + (size_t(r) * B + b) * piece, full + (size_t(b) * t + r) * piece, piece * sizeof(T));
}

template <class T>
void unpack_by_rank(const T* packed, T* full, int B, int T_local, int C, int t) {
  const size_t piece = size_t(T_local) * C;
  for (int r = 0; r < t; ++r)
    for (int b = 0; b < B; ++b)
      std::memcpy(full + (size_t(b) * t + r) * piece, packed + (size_t(r) * B + b) * piece, piece * sizeof(T));
}

}  // namespace

template <class T>
void tp_all_reduce(Communicator& tp, T* x, size_t n) {
  if (tp.size() > 1) tp.all_reduce(x, n);
}

template <class T>
void sequence_all_gather(Communicator& tp, const T* local, T* full, T* packed, int B, int T_local, int C) {
  const int t = tp.size();
  const size_t shard = size_t(B) * T_local * C;
  if (t == 1) {
    if (full != local) std::memcpy(full, local, shard * sizeof(T));
    return;
  }
  std::memcpy(packed + size_t(tp.rank()) * shard, local, shard * sizeof(T));
  tp.all_gather(packed, std::vector<size_t>(t, shard));
  unpack_by_rank(packed, full, B, T_local, C, t);
}

template <class T>
void sequence_reduce_scatter(Communicator& tp, const T* full, T* local, T* packed, int B, int T_local, int C) {
  const int t = tp.size();
  const size_t shard = size_t(B) * T_local * C;
  if (t == 1) {
    if (full != local) std::memcpy(local, full, shard * sizeof(T));
    return;
  }
  pack_by_rank(full, packed, B, T_local, C, t);
  tp.reduce_scatter(packed, std::vector<size_t>(t, shard));
  std::memcpy(local, packed + size_t(tp.rank()) * shard, shard * sizeof(T));
}

#define SHARDLAB_TP_COLLECTIVES(T)                                                      \
  template void tp_all_reduce<T>(Communicator&, T*, size_t);                            \
  template void sequence_all_gather<T>(Communicator&, const T*, T*, T*, int, int, int); \
  template void sequence_reduce_scatter<T>(Communicator&, const T*, T*, T*, int, int, int);
SHARDLAB_TP_COLLECTIVES(float)
SHARDLAB_TP_COLLECTIVES(double)
#undef SHARDLAB_TP_COLLECTIVES
// The exact mode's sums (model/linear_exact.h) reduce-scattered along s like any partial sums.
template void sequence_reduce_scatter<ExactSum>(Communicator&, const ExactSum*, ExactSum*, ExactSum*, int, int, int);

}  // namespace shardlab
