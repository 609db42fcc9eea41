// Where Buffers get their memory: 64-byte aligned blocks that, once freed, are kept for the next request
// of the same size instead of going back to the operating system. A micro-batch's activation records are
// freed after its backward and asked for again, at the same sizes, by the next micro-batch's forward:
// fresh pages from the kernel would cost a page fault each on first touch (about a tenth of a step here).
// Blocks above 64 KiB come in size classes (8 per doubling: at most 12.5% more than asked), so a request of a
// slightly different size — a MoE layer's records follow the routing — reuses a freed block too.
// PyTorch's caching allocator in miniature. The memory ledger books the bytes asked for; this cache is
// below it, like any allocator's free lists. One per process (the caller is the rank's one thread).
#pragma once
#include <cstddef>

namespace shardlab {

void* pool_allocate(size_t bytes);         // bytes: a multiple of 64; nullptr when out of memory
void pool_release(void* p, size_t bytes);  // the same bytes as allocated

}  // namespace shardlab
