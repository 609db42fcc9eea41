// The collectives under Megatron's pieces (megatron_fg.h), on the tp communicator: the all-reduce, and the
// all-gather / reduce-scatter of a sequence-parallel (B, T/t, C) shard. Activations are (B, T, C): a sequence
// shard is B pieces, packed into rank-major order around each collective (model/block.h says why).
#pragma once
#include <cstddef>

#include "comm/communicator.h"

namespace shardlab {

// ---- The collectives underneath (each bypassed when t = 1).
// f's backward and g's forward: the all-reduce over tp (in place, n elements).
template <class T>
void tp_all_reduce(Communicator& tp, T* x, size_t n);
// The sequence shards (B, T/t, C) of every tp rank into the whole sequence (B, T, C); packed: B·T·C scratch.
template <class T>
void sequence_all_gather(Communicator& tp, const T* local, T* full, T* packed, int B, int T_local, int C);
// Every rank's partial sums (B, T, C) reduced and scattered: this rank's positions (B, T/t, C) into local.
// full is used as it stands and left unspecified; packed: B·T·C scratch.
template <class T>
void sequence_reduce_scatter(Communicator& tp, const T* full, T* local, T* packed, int B, int T_local, int C);

}  // namespace shardlab
