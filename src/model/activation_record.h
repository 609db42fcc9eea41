// What one block (or the head) keeps from its forward for its backward, for one micro-batch: the
// activation record. Each saved tensor is allocated through the memory ledger under its own item name
// (category activation) when that micro-batch's forward reaches the block and released after its
// backward, so the activation peak is measured — a pipeline's stash, recompute and flash attention all
// show in it — and each tensor's bytes can be checked against the itemised formula (plan/activation_items.h).
// Several micro-batches may be in flight, each with its own records.
// Precision: with --mixed bf16 the saved activations are stored as bf16 (2 bytes, as the chapter
// assumes), rounded when produced so that forward and backward see the same tensor; LayerNorm
// statistics, flash attention's log-sum-exp and the loss's probabilities stay in the compute type.
// What is kept depends on the policy: recompute none (everything), selective (no attention
// probabilities: they are recomputed from q and k), full (only the block's input: the block's forward
// runs again in its backward); flash attention keeps the log-sum-exp instead of the probabilities.
#pragma once
#include <cstddef>
#include <string>

#include "core/bf16.h"
#include "core/ledger.h"
#include "model/activation_policy.h"
#include "model/moe.h"

namespace shardlab {

// One saved tensor: n elements of T, or of bf16 when `half`.
template <class T>
class Saved {
 public:
  Saved() = default;
  Saved(MemoryLedger& ledger, const char* item, size_t n, bool half) : half_(half) {
    if (half)  // not zeroed: every saved tensor is written whole before it is read
      h_ = Buffer<bf16>(ledger, Mem::activation, n, 0, item, false);
    else
      t_ = Buffer<T>(ledger, Mem::activation, n, 0, item, false);
  }
  bool exists() const { return h_.size() + t_.size() > 0; }
  bool half() const { return half_; }
  size_t size() const { return half_ ? h_.size() : t_.size(); }
  T* data() { return t_.data(); }  // only when !half()
  const T* data() const { return t_.data(); }
  void store(const T* src) {  // half: src is already bf16-exact (rounded when produced)
    if (half_)
      for (size_t i = 0; i < h_.size(); ++i) h_[i] = to_bf16(float(src[i]));
  }
  void load(T* dst) const {  // half: widen
    for (size_t i = 0; i < h_.size(); ++i) dst[i] = T(from_bf16(h_[i]));
  }
  void release() {
    h_.reset();
    t_.reset();
  }

 private:
  bool half_ = false;
  Buffer<T> t_;
  Buffer<bf16> h_;
};

// Where forward writes a saved tensor: its own storage, or (bf16) a compute slot.
template <class T>
T* produce(Saved<T>& s, T* slot) {
  return s.half() ? slot : s.data();
}
// After forward produced it at p: bf16 rounds p in place (the forward goes on with exactly what is
// stored) and stores it.
template <class T>
void keep(Saved<T>& s, T* p) {
  if (!s.half()) return;
  for (size_t i = 0; i < s.size(); ++i) p[i] = T(round_bf16(float(p[i])));
  s.store(p);
}
// Where backward reads a saved tensor: its storage, or (bf16) widened into a compute slot.
template <class T>
const T* use(const Saved<T>& s, T* slot) {
  if (!s.half()) return s.data();
  s.load(slot);
  return slot;
}

// One block's record. x is the block's input (the previous block's output, or the embedding's).
// A block with experts keeps the MoE's record (model/moe.h) in place of fc and gelu.
template <class T>
struct BlockRecord {
  Saved<T> x, ln1, ln1_mean, ln1_rstd, qkv, probs, lse, atty, resid_mid, ln2, ln2_mean, ln2_rstd, fc, gelu;
  MoeRecord<T> moe;
  void release_all_but_input() {
    for (Saved<T>* s :
         {&ln1, &ln1_mean, &ln1_rstd, &qkv, &probs, &lse, &atty, &resid_mid, &ln2, &ln2_mean, &ln2_rstd, &fc, &gelu})
      s->release();
    moe.release();
  }
};

// The head's record: its input (the last block's output), the final LayerNorm and the probabilities.
template <class T>
struct HeadRecord {
  Saved<T> x, lnf, lnf_mean, lnf_rstd, probs;
};

}  // namespace shardlab
