// Ring attention's messages around the cp ring (see context_parallel.h).
#include "parallel/context_parallel.h"

#include <cstring>
#include <limits>
#include <string>
#include <utility>

namespace shardlab {

namespace {
// Tags of the ring's messages (the cp communicator carries nothing else).
constexpr int kTagForwardKV = 1, kTagBackwardKV = 2, kTagGradKV = 3;
}  // namespace

template <class T>
ContextParallelAttention<T>::ContextParallelAttention(Communicator& cp, ChunkHooks<T>* inner, const ModelSlice& slice,
                                                      int Tn, int capacity, int heads, int head_dim,
                                                      MemoryLedger& ledger, Trace* trace)
    : WrappedHooks<T>(inner), cp_(cp), trace_(trace ? trace : &no_trace_) {
  for (int r = 0; r < cp.size(); ++r) positions_.push_back(TokenPositions::of_rank(Tn, cp.size(), r, slice.cp_split));
  const int Tc = slice.T_ctx(Tn);
  const size_t block = size_t(capacity) * Tc * 2 * heads * head_dim;
  for (Buffer<T>* b : {&kv_[0], &kv_[1], &dkv_mine_, &dkv_in_, &dkv_out_})
    *b = Buffer<T>(ledger, Mem::comm_buffer, block, 0, nullptr, false);
  running_sum_ = Buffer<T>(ledger, Mem::workspace, size_t(capacity) * heads * Tc, 0, nullptr, false);
  scratch_ = Buffer<T>(ledger, Mem::workspace, ring_scratch_elements(head_dim), 0, nullptr, false);
}

template <class T>
bool ContextParallelAttention<T>::attention_forward(T* out, T* lse, const T* qkv, const BlockDims& d,
                                                    const Dropout& drop, T* /*scratch*/) {
  const RingDims rd = dims_of(d);
  const int c = cp_.size(), r = cp_.rank(), next = (r + 1) % c, prev = (r + c - 1) % c;
  const size_t n = size_t(rd.B) * rd.Tc * 2 * rd.CL(), stats = size_t(rd.B) * rd.NH * rd.Tc;
  Communicator::Purpose purpose(cp_, "ring_attention");
  T *m = lse, *l = running_sum_.data();  // the running maximum in lse's place until ring_finish
  std::fill(m, m + stats, -std::numeric_limits<T>::infinity());
  std::fill(l, l + stats, T(0));
  std::memset(static_cast<void*>(out), 0, size_t(rd.B) * rd.Tc * rd.CL() * sizeof(T));
  pack_kv(kv_[0].data(), qkv, rd);
  int cur = 0;
  for (int s = 0; s < c; ++s) {
    Communicator::Pending sending, receiving;
    if (s + 1 < c) {  // the next block is on its way while this one is computed
      sending = cp_.start_send(kv_[cur].data(), n, next, kTagForwardKV);
      receiving = cp_.start_recv(kv_[1 - cur].data(), n, prev, kTagForwardKV);
    }
    {
      Trace::Span span(*trace_, "ring attention step " + std::to_string(s), "compute");
      ring_block_forward(out, m, l, qkv, positions_of(r), kv_[cur].data(), positions_of((r - s + c) % c), rd, drop,
                         scratch_.data(), c > 1 ? &Communicator::progress_all : nullptr);
    }
    if (s + 1 < c) {
      Trace::Span span(*trace_, "wait cp", "comm");  // the K/V transfer's exposed part
      cp_.wait(receiving);
      cp_.wait(sending);
      cur = 1 - cur;
    }
  }
  ring_finish(out, lse, m, l, rd);
  return true;
}

template <class T>
bool ContextParallelAttention<T>::attention_backward(T* d_qkv, const T* d_out, const T* out, const T* qkv, const T* lse,
                                                     const BlockDims& d, const Dropout& drop, T* /*scratch*/) {
  const RingDims rd = dims_of(d);
  const int c = cp_.size(), r = cp_.rank(), next = (r + 1) % c, prev = (r + c - 1) % c;
  const size_t n = size_t(rd.B) * rd.Tc * 2 * rd.CL();
  Communicator::Purpose purpose(cp_, "ring_attention");
  std::memset(static_cast<void*>(d_qkv), 0, size_t(rd.B) * rd.Tc * 3 * rd.CL() * sizeof(T));
  pack_kv(kv_[0].data(), qkv, rd);
  T *mine = dkv_mine_.data(), *in = dkv_in_.data(), *sum = dkv_out_.data();
  Communicator::Pending grad_sending, grad_receiving;
  int cur = 0;
  for (int s = 0; s < c; ++s) {
    Communicator::Pending sending, receiving;
    if (s + 1 < c) {
      sending = cp_.start_send(kv_[cur].data(), n, next, kTagBackwardKV);
      receiving = cp_.start_recv(kv_[1 - cur].data(), n, prev, kTagBackwardKV);
    }
    std::memset(static_cast<void*>(mine), 0, n * sizeof(T));
    {
      Trace::Span span(*trace_, "ring attention backward step " + std::to_string(s), "compute");
      ring_block_backward(d_qkv, mine, d_out, out, qkv, lse, positions_of(r), kv_[cur].data(),
                          positions_of((r - s + c) % c), rd, drop, scratch_.data(),
                          c > 1 ? &Communicator::progress_all : nullptr);
    }
    // The block's dK/dV so far: the ranks before this one added theirs (in ring order), then this rank's share.
    if (s > 0) {
      {
        Trace::Span span(*trace_, "wait cp", "comm");
        cp_.wait(grad_receiving);
        cp_.wait(grad_sending);  // `sum` is free again
      }
      for (size_t i = 0; i < n; ++i) sum[i] = in[i] + mine[i];
    } else {
      std::memcpy(static_cast<void*>(sum), mine, n * sizeof(T));
    }
    if (c > 1) {  // on to the next rank; after the last step that is the block's home
      grad_sending = cp_.start_send(sum, n, next, kTagGradKV);
      grad_receiving = cp_.start_recv(in, n, prev, kTagGradKV);
    }
    if (s + 1 < c) {
      Trace::Span span(*trace_, "wait cp", "comm");
      cp_.wait(receiving);
      cp_.wait(sending);
      cur = 1 - cur;
    }
  }
  if (c > 1) {
    Trace::Span span(*trace_, "wait cp", "comm");
    cp_.wait(grad_receiving);  // this rank's own block, every rank's share added
    cp_.wait(grad_sending);
  }
  unpack_dkv(d_qkv, c > 1 ? in : sum, rd);
  return true;
}

template class ContextParallelAttention<float>;
template class ContextParallelAttention<double>;

}  // namespace shardlab
