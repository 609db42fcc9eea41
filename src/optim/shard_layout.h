// Shard geometry of a flat buffer of Ψ elements over a group of G ranks (ZeRO / FSDP):
//   S = ceil(Ψ / G) elements per shard; member m owns the flat range [m·S, (m+1)·S);
//   buffers are padded with zeros to Ψ_pad = G·S so every shard has the same size.
// Every ring collective over (part of) the flat buffer splits it at these shard boundaries, so an
// element is always reduced in the same order — by its owner's ring — whatever the bucket or unit
// it travels in. That is what makes ZeRO-1/2/3 bit-identical to plain DP.
// With G = 1 nothing is padded and the single member owns everything.
#pragma once
#include <algorithm>
#include <cstddef>
#include <vector>

namespace shardlab {

struct ShardLayout {
  size_t params = 0;  // Ψ
  int group = 1;      // G
  int member = 0;     // this rank's index in the group

  ShardLayout() = default;
  ShardLayout(size_t psi, int g, int m) : params(psi), group(g), member(m) {}
  size_t shard() const { return (params + group - 1) / group; }  // S
  size_t padded() const { return shard() * group; }              // Ψ_pad
  size_t begin(int m) const { return static_cast<size_t>(m) * shard(); }
  size_t my_begin() const { return begin(member); }
  size_t my_end() const { return begin(member + 1); }
  // Elements of the flat range [a, b) owned by each member: the chunk sizes of a ring over it.
  std::vector<size_t> counts(size_t a, size_t b) const {
    std::vector<size_t> c(group);
    for (int m = 0; m < group; ++m) {
      size_t lo = std::max(a, begin(m)), hi = std::min(b, begin(m + 1));
      c[m] = hi > lo ? hi - lo : 0;
    }
    return c;
  }
};

}  // namespace shardlab
