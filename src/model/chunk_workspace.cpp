// A model chunk's scratch, allocated once (see chunk_workspace.h).
#include "model/chunk_workspace.h"

#include "model/flash_attention.h"

namespace shardlab {

template <class T>
ChunkWorkspace<T>::ChunkWorkspace(const BlockDims& d, const ActivationPolicy& policy, MemoryLedger& ledger)
    : dims_(d), policy_(policy) {
  const size_t R = d.rows(), N = d.region_rows(), C = d.C, CL = d.CL(), F = d.F, T2 = size_t(d.T) * d.T;
  const bool naive = policy.attention == AttentionKernel::naive, bf16 = policy.bf16;
  auto buffer = [&](size_t n) -> T* {
    if (n == 0) return nullptr;
    buffers_.emplace_back(ledger, Mem::workspace, n);
    return buffers_.back().data();
  };
  BlockScratch<T>& ws = scratch_;
  ws.d_res = buffer(R * C);
  ws.d_tmp = buffer(R * C);
  ws.d_ln = buffer(N * C);
  ws.d_qkv = buffer(N * 3 * CL);
  ws.d_fc = buffer(N * F);
  ws.d_gelu = buffer(N * F);
  ws.attention = buffer(naive ? 2 * T2 : flash_scratch_elements());
  if (naive && (policy.recompute == Recompute::selective || bf16)) ws.probs = buffer(size_t(d.B) * d.NH * T2);
  if (policy.recompute == Recompute::full) ws.discard = buffer(R * C);
  if (N != R) {
    ws.full_a = buffer(N * C);
    ws.full_b = buffer(N * C);
  }
  if (bf16) {
    ws.x = buffer(R * C);
    ws.ln1 = buffer(R * C);
    ws.resid_mid = buffer(R * C);
    ws.ln2 = buffer(R * C);
    ws.qkv = buffer(N * 3 * CL);
    ws.atty = buffer(N * CL);
    ws.fc = buffer(N * F);
    ws.gelu = buffer(N * F);
  }
}

template <class T>
bool ChunkWorkspace<T>::fits(const BlockDims& d, const ActivationPolicy& policy) const {
  return d.B <= dims_.B && d.T == dims_.T && d.C == dims_.C && d.NH == dims_.NH && d.HD == dims_.HD && d.F == dims_.F &&
         d.T_local == dims_.T_local && policy.bf16 == policy_.bf16 && policy.recompute == policy_.recompute &&
         policy.attention == policy_.attention;
}

template class ChunkWorkspace<float>;
template class ChunkWorkspace<double>;

}  // namespace shardlab
