// One model-state category over a flat range [begin, begin + size) of the parameter index space,
// stored as T or as bf16 (rounded to nearest even), booked in the ledger under its category.
// Range operations widen to T or round from T in one place, so the rest of the code never cares
// which storage a recipe picked. A full buffer has begin 0; a ZeRO shard has begin = m·S.
#pragma once
#include <cstddef>

#include "core/bf16.h"
#include "core/ledger.h"

namespace shardlab {

template <class T>
class FlatStore {
 public:
  FlatStore() = default;
  // Element g sits at the alignment it has in a whole buffer (alignment_phase), whatever the range.
  FlatStore(MemoryLedger& ledger, Mem cat, bool half, size_t begin, size_t size) : bf16_(half), begin_(begin) {
    if (half)
      h_ = Buffer<bf16>(ledger, cat, size, alignment_phase<bf16>(begin));
    else
      t_ = Buffer<T>(ledger, cat, size, alignment_phase<T>(begin));
  }
  bool exists() const { return h_.size() + t_.size() > 0; }
  bool is_bf16() const { return bf16_; }
  size_t begin() const { return begin_; }
  size_t size() const { return bf16_ ? h_.size() : t_.size(); }
  size_t end() const { return begin_ + size(); }
  size_t elem_bytes() const { return bf16_ ? sizeof(bf16) : sizeof(T); }
  // The element at flat index g in storage form (for communication and checkpoints).
  void* raw(size_t g) {
    return bf16_ ? static_cast<void*>(h_.data() + (g - begin_)) : static_cast<void*>(t_.data() + (g - begin_));
  }
  const void* raw(size_t g) const { return const_cast<FlatStore*>(this)->raw(g); }
  T* t(size_t g) { return t_.data() + (g - begin_); }     // only when !is_bf16()
  bf16* h(size_t g) { return h_.data() + (g - begin_); }  // only when is_bf16()
  const T* t(size_t g) const { return t_.data() + (g - begin_); }
  const bf16* h(size_t g) const { return h_.data() + (g - begin_); }

  void load(T* dst, size_t a, size_t b) const {  // dst[0, b-a) = widen(x[a, b))
    if (bf16_) {
      const bf16* s = h_.data() + (a - begin_);
      for (size_t i = 0; i < b - a; ++i) dst[i] = T(from_bf16(s[i]));
    } else {
      const T* s = t_.data() + (a - begin_);
      for (size_t i = 0; i < b - a; ++i) dst[i] = s[i];
    }
  }
  void store(const T* src, size_t a, size_t b) {  // x[a, b) = round(src)
    if (bf16_) {
      bf16* d = h_.data() + (a - begin_);
      for (size_t i = 0; i < b - a; ++i) d[i] = to_bf16(float(src[i]));
    } else {
      T* d = t_.data() + (a - begin_);
      for (size_t i = 0; i < b - a; ++i) d[i] = src[i];
    }
  }
  void accumulate(const T* src, size_t a, size_t b) {  // x[a, b) = round(x + src)
    if (bf16_) {
      bf16* d = h_.data() + (a - begin_);
      for (size_t i = 0; i < b - a; ++i) d[i] = to_bf16(from_bf16(d[i]) + float(src[i]));
    } else {
      T* d = t_.data() + (a - begin_);
      for (size_t i = 0; i < b - a; ++i) d[i] += src[i];
    }
  }
  void zero() {
    h_.zero();
    t_.zero();
  }
  void release() {
    h_.reset();
    t_.reset();
  }

 private:
  bool bf16_ = false;
  size_t begin_ = 0;
  Buffer<bf16> h_;
  Buffer<T> t_;
};

}  // namespace shardlab
