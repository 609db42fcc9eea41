// Memory ledger: every model-state and activation buffer of a rank is allocated through it,
// tagged with a category, so "how many bytes does this layout use" is measured, not guessed.
// Tracks current and peak bytes per category and the peak of the total, and, for buffers allocated
// under an item name (each saved activation tensor: "block.qkv", "head.probs", …), the same per item
// plus how many were allocated and their bytes, so an activation peak is itemised and each tensor's size
// per layer and micro-batch can be checked against a formula. One ledger per rank, passed explicitly.
// Leaves out: allocator tricks (fragmentation, caching) — bytes are bytes asked for.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

#include <nlohmann/json_fwd.hpp>

#include "core/buffer_pool.h"

namespace shardlab {

enum class Mem { param, grad, master, adam_m, adam_v, momentum, activation, comm_buffer, workspace, count };
constexpr int kMemCategories = static_cast<int>(Mem::count);
const char* mem_name(Mem c);

// One named item's bookkeeping.
struct LedgerItem {
  size_t current = 0, peak = 0;
  size_t allocations = 0, bytes_allocated = 0;  // every allocation under this name, and their sum
  size_t last_bytes = 0;                        // the size of the latest one
  bool uniform = true;                          // every allocation had the same size
};

class MemoryLedger {
 public:
  // item: a static name for itemised buffers (nullptr: the category only). Returns whether the item
  // was recorded (not while itemising is paused).
  bool allocate(Mem c, size_t bytes, const char* item = nullptr);
  // Evaluation's forwards allocate records too; pausing keeps them out of the items (the categories
  // and peaks still count them), so the items describe training alone.
  void pause_items(bool paused) { items_paused_ = paused; }
  // Never throws (buffers release from destructors): releasing more than is booked clamps the
  // category to 0 and counts a mismatch, which to_json reports.
  void release(Mem c, size_t bytes, const char* item = nullptr) noexcept;
  const std::map<std::string, LedgerItem>& items() const { return items_; }
  size_t mismatched_releases() const { return mismatched_; }
  size_t current(Mem c) const { return current_[idx(c)]; }
  size_t peak(Mem c) const { return peak_[idx(c)]; }
  size_t total_current() const { return total_current_; }
  size_t total_peak() const { return total_peak_; }
  // Model states: param + grad + master + optimizer states.
  size_t model_state_bytes() const;
  void reset_peaks();  // peaks := current (e.g. after setup, to see one step)
  // {"param": {"current": n, "peak": n}, ..., "items": {"block.qkv": {"current", "peak", "allocations",
  // "bytes_allocated", "bytes_each" (when uniform)}, ...}}
  nlohmann::json to_json() const;

 private:
  static int idx(Mem c) { return static_cast<int>(c); }
  std::array<size_t, kMemCategories> current_{}, peak_{};
  size_t total_current_ = 0, total_peak_ = 0, mismatched_ = 0;
  std::map<std::string, LedgerItem> items_;
  bool items_paused_ = false;
};

constexpr size_t kBufferAlign = 64;  // bytes: one cache line, one AVX-512 register

// Where element g of a flat index space (the parameter layout) sits within a 64-byte line when element
// 0 starts one: the `phase` a buffer holding elements [g, …) gets, so that element g has the same
// alignment in every layout. Vectorised code (Eigen) peels unaligned leading elements onto a scalar
// path, and the scalar and vector paths may round differently (fused multiply-adds); with equal
// alignment every layout takes the same path for the same element, which keeps ZeRO and pipeline
// stages bit-identical to the whole buffer.
template <class T>
size_t alignment_phase(size_t g) {
  return g % (kBufferAlign / sizeof(T));
}

// An owned array whose bytes are booked in a ledger, zero-initialised unless `zero` is false (for a
// tensor that is written whole before it is read). Element 0 starts `phase` elements into a 64-byte
// aligned line (0: aligned). Memory comes from the buffer pool (buffer_pool.h).
template <class T>
class Buffer {
 public:
  Buffer() = default;
  Buffer(MemoryLedger& ledger, Mem cat, size_t n, size_t phase = 0, const char* item = nullptr, bool zero = true)
      : ledger_(&ledger), cat_(cat), item_(item), n_(n) {
    if (n_ == 0) return;
    block_ = ((n_ + phase) * sizeof(T) + kBufferAlign - 1) / kBufferAlign * kBufferAlign;
    base_ = pool_allocate(block_);
    if (!base_)
      throw std::runtime_error("out of memory: the machine did not give " + std::to_string(block_) + " bytes of " +
                               mem_name(cat_) + (item_ ? std::string(" (") + item_ + ")" : std::string()) +
                               " to this rank, which held " + std::to_string(ledger.total_current()) +
                               " bytes then; lower --micro-batch, --seq or --hidden, or run without --force-memory "
                               "to be told before it starts");
    data_ = static_cast<T*>(base_) + phase;
    if (zero) std::memset(static_cast<void*>(data_), 0, n_ * sizeof(T));
    if (!ledger_->allocate(cat_, n_ * sizeof(T), item_)) item_ = nullptr;
  }
  ~Buffer() { reset(); }  // noexcept: the ledger never throws on release
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& o) noexcept { swap(o); }
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      reset();
      swap(o);
    }
    return *this;
  }

  void reset() noexcept {
    if (data_) {
      ledger_->release(cat_, n_ * sizeof(T), item_);
      pool_release(base_, block_);
    }
    base_ = nullptr;
    data_ = nullptr;
    n_ = 0;
  }
  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return n_; }
  size_t bytes() const { return n_ * sizeof(T); }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  void zero() {
    if (n_) std::memset(static_cast<void*>(data_), 0, n_ * sizeof(T));
  }

 private:
  void swap(Buffer& o) {
    std::swap(ledger_, o.ledger_);
    std::swap(cat_, o.cat_);
    std::swap(item_, o.item_);
    std::swap(base_, o.base_);
    std::swap(block_, o.block_);
    std::swap(data_, o.data_);
    std::swap(n_, o.n_);
  }
  MemoryLedger* ledger_ = nullptr;
  Mem cat_ = Mem::workspace;
  const char* item_ = nullptr;
  void* base_ = nullptr;  // the pool's block
  size_t block_ = 0;      // its bytes
  T* data_ = nullptr;
  size_t n_ = 0;
};

}  // namespace shardlab
