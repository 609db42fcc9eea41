// The tile sizes of flash attention (flash_attention.h) and the scratch they need — what the memory
// estimate (plan/memory_need.cpp) counts without including the kernel.
#pragma once
#include <cstddef>

namespace shardlab {

constexpr int kFlashQueryBlock = 64, kFlashKeyBlock = 256;
static_assert(kFlashKeyBlock % kFlashQueryBlock == 0, "every visited key block then holds ≥ 1 key of each query row");

// Scratch elements the pair needs: two (query block × key block) tiles and two rows of statistics.
constexpr size_t flash_scratch_elements() {
  return 2 * size_t(kFlashQueryBlock) * kFlashKeyBlock + 2 * kFlashQueryBlock;
}

}  // namespace shardlab
