// The exact mode under context parallelism (--exact --cp c): which cp rank runs which samples' products whole.
// A BLAS kernel may round a row of a product differently when the call has another number of rows beside it
// (OpenBLAS's SkylakeX kernels, its Haswell sgemm), and a weight gradient's sum runs over all of a sample's rows:
// so the exact mode's products, which the single process runs on a sample's T rows at once (row_split.h), must see
// those T rows in one call, in position order, on every layout. A cp rank holds only T/c tokens of each sample; so
// inside each tensor-parallel region (QKV → attention → W^O, fc → GELU → fc-proj, and the LM head) the samples of a
// micro-batch are dealt out whole to the cp ranks instead: rank r runs samples [first(r), first(r + 1)), gathering
// their rows from the other cp ranks when the region is entered and sending each row's result home when it is left
// (parallel/exact_context_parallel.h). Everything per token outside the regions — the embedding, LayerNorms,
// dropout on activations, the residual stream, the loss's LayerNorm — stays on the token's own cp rank.
// region_of(d) is the block's dimensions inside a region: this rank's whole samples (d itself everywhere else).
#pragma once
#include <cstdint>

#include "model/block.h"

namespace shardlab {

// The first of the samples cp rank r of c runs whole, of a micro-batch of B (the ranks' counts differ by ≤ 1).
inline int first_whole_sample(int B, int c, int r) { return static_cast<int>(int64_t(r) * B / c); }

// True when the block runs its regions on whole samples: the exact mode with the tokens split over cp ranks.
inline bool runs_whole_samples(const BlockDims& d) { return d.split.exact && d.T_ctx < d.T; }

inline BlockDims region_of(const BlockDims& d) {
  if (!runs_whole_samples(d)) return d;
  const int c = d.T / d.T_ctx, r = d.pos.chunk[0];  // cp rank r holds chunk r (token_positions.h)
  const int first = first_whole_sample(d.B, c, r), count = first_whole_sample(d.B, c, r + 1) - first;
  BlockDims w = d;
  w.B = count;
  w.first_sample = d.first_sample + first;
  w.T_ctx = w.T_local = d.T;
  w.first_row = 0;
  w.pos = TokenPositions::whole(d.T);
  w.split.groups = count > 0 ? count : 1;  // no samples here: one empty group
  w.split.first_group = d.split.first_group + first;
  return w;
}

}  // namespace shardlab
