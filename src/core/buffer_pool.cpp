// The buffer pool (see buffer_pool.h): free lists by size class, at most kCacheBytes kept.
#include "core/buffer_pool.h"

#include <cstdlib>
#include <unordered_map>
#include <vector>

namespace shardlab {

namespace {
constexpr size_t kCacheBytes = size_t(4) << 30;  // beyond this, freed blocks go back to the system

struct Pool {
  std::unordered_map<size_t, std::vector<void*>> free;
  size_t cached = 0;
  ~Pool() {
    for (auto& [bytes, blocks] : free)
      for (void* p : blocks) std::free(p);
  }
};

Pool& pool() {
  static Pool p;
  return p;
}

// Small blocks keep their exact size; above 64 KiB a block is rounded up to one of 8 sizes per doubling (at most
// 12.5% more than asked), so records whose rows vary from call to call — a MoE layer's, set by the routing —
// find a freed block again instead of fresh pages.
size_t size_class(size_t bytes) {
  if (bytes <= (size_t(64) << 10)) return bytes;
  size_t top = size_t(1) << (63 - __builtin_clzll(bytes));
  const size_t step = top / 8;
  return (bytes + step - 1) / step * step;
}
}  // namespace

void* pool_allocate(size_t bytes) {
  bytes = size_class(bytes);
  Pool& p = pool();
  auto it = p.free.find(bytes);
  if (it != p.free.end() && !it->second.empty()) {
    void* block = it->second.back();
    it->second.pop_back();
    p.cached -= bytes;
    return block;
  }
  return std::aligned_alloc(64, bytes);
}

void pool_release(void* block, size_t bytes) {
  bytes = size_class(bytes);
  Pool& p = pool();
  if (p.cached + bytes > kCacheBytes) {
    std::free(block);
    return;
  }
  p.free[bytes].push_back(block);
  p.cached += bytes;
}

}  // namespace shardlab
