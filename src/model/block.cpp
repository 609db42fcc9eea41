// One transformer block's forward and backward (see block.h): the layer pairs of src/model composed, in
// the order of the single-process model, with the tensor-parallel seams and the record's policy.
#include "model/block.h"

#include <cstring>

#include "core/flops.h"
#include "model/attention.h"
#include "model/dropout.h"
#include "model/flash_attention.h"
#include "model/gelu.h"
#include "model/layernorm.h"
#include "model/linear.h"
#include "model/region_products.h"
#include "model/whole_samples.h"

namespace shardlab {

namespace {

struct Dropouts {
  Dropout attn, proj, mlp;
  Dropouts(const BlockRun& run, const BlockDims& d) {
    auto make = [&](const char* site) {
      return Dropout::make(run.dropout, run.drop.seed, site, run.drop.step, d.layer,
                           run.drop.first_sample + d.first_sample, d.T, d.C, d.heads_total, d.first_head, d.first_row,
                           d.pos);
    };
    attn = make("dropout:attn");
    proj = make("dropout:proj");
    mlp = make("dropout:mlp");
  }
};

bool keeps_probs(const ActivationPolicy& p) {
  return p.attention == AttentionKernel::naive && p.recompute != Recompute::selective;
}

// A step's routing statistics from one MoE block's forward.
template <class T>
void note_routing(MoeStats& stats, const MoeRouting<T>& r, const BlockDims& d) {
  stats.aux += r.aux;
  stats.z += r.z;
  exact_merge(stats.aux_terms, r.aux_terms);
  exact_merge(stats.z_terms, r.z_terms);
  stats.dropped += r.dropped;
  if (stats.load.size() <= size_t(d.layer)) stats.load.resize(d.layer + 1);
  std::vector<double>& load = stats.load[d.layer];
  load.resize(d.experts, 0.0);
  for (int g = 0; g < r.G; ++g)
    for (int e = 0; e < d.experts; ++e) load[e] += r.routed(g)[e];
}

// The dense MLP's forward: out = fcproj(gelu(fc(ln2))) (R, C), through the tensor-parallel region (dr: its
// dimensions, whole_samples.h).
template <class T>
void mlp_forward(BlockRecord<T>& rec, T* out, const T* ln2, const BlockTensors<const T*>& w, const BlockDims& d,
                 const BlockDims& dr, BlockScratch<T>& ws, RegionHooks<T>& hooks, MemoryLedger& ledger) {
  const int C = d.C, F = d.F;
  const int R = static_cast<int>(d.rows()), N = static_cast<int>(dr.region_rows());
  const T* h2 = hooks.enter(ln2, ws.full_a, d);
  T* fc = produce(rec.fc, ws.fc);
  column_forward(fc, h2, w.fc_w, w.fc_b, N, C, F, dr.split, d.mlp_chunk());
  keep(rec.fc, fc);
  T* gelu = produce(rec.gelu, ws.gelu);
  gelu_forward(gelu, fc, static_cast<size_t>(N) * F);
  keep(rec.gelu, gelu);
  T* partial2 = N == R ? out : ws.full_b;
  row_forward_leave(partial2, out, gelu, w.fcproj_w, N, F, C, dr, d.mlp_chunk(), hooks, ledger);
  MatMap<T>(out, R, C).rowwise() += ConstVecMap<T>(w.fcproj_b, C);
}

// The dense MLP's backward from its output's gradient (R, C): returns where d(ln2) is (R rows, in place in ws.d_ln).
template <class T>
T* mlp_backward(BlockTensors<T*>& g, const BlockTensors<const T*>& w, BlockRecord<T>& rec, const T* d_mlp_out,
                const T* ln2, const BlockDims& d, const BlockDims& dr, BlockScratch<T>& ws, RegionHooks<T>& hooks,
                MemoryLedger& ledger, const BlockTensors<ExactSum*>* sums) {
  const int C = d.C, F = d.F;
  const int R = static_cast<int>(d.rows()), N = static_cast<int>(dr.region_rows());
  const T* fc = use(rec.fc, ws.fc);
  const T* gelu = use(rec.gelu, ws.gelu);
  const T* dy2 = hooks.leave_backward(d_mlp_out, ws.full_b, d);
  row_backward(ws.d_gelu, g.fcproj_w, N == R && !sums ? g.fcproj_b : static_cast<T*>(nullptr), dy2, gelu, w.fcproj_w, N,
               F, C, dr.split, d.mlp_chunk());
  if (sums)
    bias_backward_exact(sums->fcproj_b, d_mlp_out, R, C);
  else if (N != R)
    bias_backward(g.fcproj_b, d_mlp_out, R, C, d.split);
  gelu_backward(ws.d_fc, ws.d_gelu, fc, static_cast<size_t>(N) * F);
  return column_backward_enter(ws.d_ln, g.fc_w, g.fc_b, ws.d_fc, hooks.region_input(ln2, ws.full_a, d), w.fc_w, N, C, F,
                               dr, d.mlp_chunk(), hooks, ledger);
}

}  // namespace

template <class T>
void allocate_block_record(BlockRecord<T>& rec, const BlockDims& d, const ActivationPolicy& policy,
                           MemoryLedger& ledger) {
  const BlockDims dr = region_of(d);  // the tensors inside the regions: this rank's region rows
  const size_t R = d.rows(), N = dr.region_rows(), C = d.C, CL = d.CL(), F = d.F;
  const bool h = policy.bf16;
  rec.ln1 = Saved<T>(ledger, "block.ln1", R * C, h);
  rec.ln1_mean = Saved<T>(ledger, "block.ln1_mean", R, false);
  rec.ln1_rstd = Saved<T>(ledger, "block.ln1_rstd", R, false);
  rec.qkv = Saved<T>(ledger, "block.qkv", N * 3 * CL, h);
  if (keeps_probs(policy)) rec.probs = Saved<T>(ledger, "block.probs", size_t(dr.B) * d.NH * d.T * d.T, h);
  if (policy.attention == AttentionKernel::flash)
    rec.lse = Saved<T>(ledger, "block.lse", size_t(dr.B) * d.NH * dr.T_ctx, false);
  rec.atty = Saved<T>(ledger, "block.atty", N * CL, h);
  rec.resid_mid = Saved<T>(ledger, "block.resid_mid", R * C, h);
  rec.ln2 = Saved<T>(ledger, "block.ln2", R * C, h);
  rec.ln2_mean = Saved<T>(ledger, "block.ln2_mean", R, false);
  rec.ln2_rstd = Saved<T>(ledger, "block.ln2_rstd", R, false);
  if (d.experts > 0) return;  // the MoE's record is allocated as its forward routes (moe.h)
  rec.fc = Saved<T>(ledger, "block.fc", N * F, h);
  rec.gelu = Saved<T>(ledger, "block.gelu", N * F, h);
}

template <class T>
void block_forward(BlockRecord<T>& rec, T* out, const BlockTensors<const T*>& w, const BlockDims& d,
                   const BlockRun& run, BlockScratch<T>& ws, RegionHooks<T>& hooks, MemoryLedger& ledger) {
  const int B = d.B, C = d.C, CL = d.CL();
  const BlockDims dr = region_of(d);  // inside the regions (whole_samples.h)
  const int R = static_cast<int>(d.rows()), N = static_cast<int>(dr.region_rows());
  const Dropouts drop(run, d), region_drop(run, dr);
  const T* x = rec.x.half() ? ws.x : rec.x.data();

  // Attention sublayer: resid_mid = x + drop(proj(attention(qkv(ln1(x))))).
  T* ln1 = produce(rec.ln1, ws.ln1);
  layernorm_forward(ln1, rec.ln1_mean.data(), rec.ln1_rstd.data(), x, w.ln1_w, w.ln1_b, R, C);
  keep(rec.ln1, ln1);
  const T* h1 = hooks.enter(ln1, ws.full_a, d);
  T* qkv = produce(rec.qkv, ws.qkv);
  column_forward(qkv, h1, w.qkv_w, w.qkv_b, N, C, 3 * CL, dr.split, 3 * d.HD);  // a head's q, k, v: one chunk
  keep(rec.qkv, qkv);
  T* atty = produce(rec.atty, ws.atty);
  const AttentionDims ad{dr.B, d.T, CL, d.NH};
  {
    AttentionFlops attention_flops;
    if (hooks.attention_forward(atty, rec.lse.data(), qkv, d, drop.attn, ws.attention)) {
      // context parallelism: ring attention over every rank's keys (the flash kernel's contract)
    } else if (run.policy.attention == AttentionKernel::flash) {
      flash_attention_forward(atty, rec.lse.data(), qkv, ad, region_drop.attn, ws.attention);
    } else {
      T* probs = rec.probs.exists() ? produce(rec.probs, ws.probs) : ws.probs;
      attention_forward(atty, probs, qkv, ad, region_drop.attn, ws.attention, run.policy.bf16);
      if (rec.probs.exists()) rec.probs.store(probs);  // already rounded, as produced
    }
  }
  keep(rec.atty, atty);
  T* resid_mid = produce(rec.resid_mid, ws.resid_mid);
  T* partial = N == R ? resid_mid : ws.full_b;  // (N, C): this rank's share of W^O's sum
  row_forward_leave(partial, resid_mid, atty, w.proj_w, N, CL, C, dr, d.HD, hooks, ledger);
  MatMap<T>(resid_mid, R, C).rowwise() += ConstVecMap<T>(w.proj_b, C);  // the bias once, after the sum
  if (drop.proj.active()) drop.proj.apply_activation(resid_mid, B, d.T_local);
  MatMap<T>(resid_mid, R, C) += ConstMatMap<T>(x, R, C);  // residual 1
  keep(rec.resid_mid, resid_mid);

  // MLP sublayer: out = resid_mid + drop(fcproj(gelu(fc(ln2(resid_mid))))), or drop(experts(ln2(resid_mid))).
  T* ln2 = produce(rec.ln2, ws.ln2);
  layernorm_forward(ln2, rec.ln2_mean.data(), rec.ln2_rstd.data(), resid_mid, w.ln2_w, w.ln2_b, R, C);
  keep(rec.ln2, ln2);
  if (d.experts > 0) {  // whole experts on every tp rank: the MoE runs on the residual rows, no region seams
    moe_forward(out, rec.moe, ln2, w.moe, d.moe(), hooks, ledger);
    if (run.moe_stats) note_routing(*run.moe_stats, rec.moe.routing, d);
  } else {
    mlp_forward(rec, out, ln2, w, d, dr, ws, hooks, ledger);
  }
  if (drop.mlp.active()) drop.mlp.apply_activation(out, B, d.T_local);
  MatMap<T>(out, R, C) += ConstMatMap<T>(resid_mid, R, C);  // residual 2
  if (run.policy.recompute == Recompute::full) rec.release_all_but_input();
}

template <class T>
void block_backward(BlockTensors<T*>& g, const BlockTensors<const T*>& w, BlockRecord<T>& rec, const BlockDims& d,
                    const BlockRun& run, BlockScratch<T>& ws, RegionHooks<T>& hooks, MemoryLedger& ledger,
                    const BlockTensors<ExactSum*>* sums) {
  const int B = d.B, C = d.C, CL = d.CL();
  const BlockDims dr = region_of(d);  // inside the regions (whole_samples.h)
  const int R = static_cast<int>(d.rows()), N = static_cast<int>(dr.region_rows());
  const size_t RC = static_cast<size_t>(R) * C;
  if (run.policy.recompute == Recompute::full) {  // claim C27: the block's forward once more
    FlopPhase phase(Flop::block_recompute);
    allocate_block_record(rec, d, run.policy, ledger);
    if (rec.x.half()) rec.x.load(ws.x);
    block_forward(rec, ws.discard, w, d,
                  BlockRun{{run.policy.bf16, Recompute::none, run.policy.attention}, run.dropout, run.drop}, ws, hooks,
                  ledger);
  }
  const Dropouts drop(run, d), region_drop(run, dr);
  const T* x = use(rec.x, ws.x);
  const T* ln1 = use(rec.ln1, ws.ln1);
  const T* qkv = use(rec.qkv, ws.qkv);
  const T* atty = use(rec.atty, ws.atty);
  const T* resid_mid = use(rec.resid_mid, ws.resid_mid);
  const T* ln2 = use(rec.ln2, ws.ln2);

  // A sublayer's output gradient from the residual stream's: through its dropout (the same mask, regenerated).
  auto through_dropout = [&](const Dropout& dr) -> const T* {
    if (!dr.active()) return ws.d_res;
    std::memcpy(ws.d_tmp, ws.d_res, RC * sizeof(T));
    dr.apply_activation(ws.d_tmp, B, d.T_local);
    return ws.d_tmp;
  };

  // MLP branch. ws.d_res holds d(out).
  const T* d_mlp_out = through_dropout(drop.mlp);
  T* d_ln2 = ws.d_ln;
  if (d.experts > 0)
    moe_backward(d_ln2, g.moe, d_mlp_out, rec.moe, ln2, w.moe, d.moe(), T(run.aux_weight), T(run.z_weight), hooks,
                 ledger, sums ? &sums->moe : nullptr);
  else
    d_ln2 = mlp_backward(g, w, rec, d_mlp_out, ln2, d, dr, ws, hooks, ledger, sums);
  layernorm_backward(ws.d_res, g.ln2_w, g.ln2_b, d_ln2, resid_mid, w.ln2_w, rec.ln2_mean.data(), rec.ln2_rstd.data(), R,
                     C, d.split, sums ? sums->ln2_w : nullptr,
                     sums ? sums->ln2_b : nullptr);  // ws.d_res = d(resid_mid)

  // Attention branch.
  const T* d_proj_out = through_dropout(drop.proj);
  const T* dy1 = hooks.leave_backward(d_proj_out, ws.full_b, d);
  T* d_atty = ws.d_fc;  // reuse: (N, CL) fits in (N, F)
  row_backward(d_atty, g.proj_w, N == R && !sums ? g.proj_b : static_cast<T*>(nullptr), dy1, atty, w.proj_w, N, CL, C,
               dr.split, d.HD);
  if (sums)
    bias_backward_exact(sums->proj_b, d_proj_out, R, C);
  else if (N != R)
    bias_backward(g.proj_b, d_proj_out, R, C, d.split);
  const AttentionDims ad{dr.B, d.T, CL, d.NH};
  {
    AttentionFlops attention_flops;
    if (hooks.attention_backward(ws.d_qkv, d_atty, atty, qkv, rec.lse.data(), d, drop.attn, ws.attention)) {
      // context parallelism: K/V around the ring again, dK/dV home
    } else if (run.policy.attention == AttentionKernel::flash) {
      flash_attention_backward(ws.d_qkv, d_atty, atty, qkv, rec.lse.data(), ad, region_drop.attn, ws.attention);
    } else {
      const T* probs = rec.probs.exists() ? use(rec.probs, ws.probs) : ws.probs;
      if (!rec.probs.exists()) {  // claim C28: selective recompute re-runs only the s² part
        FlopPhase phase(Flop::block_recompute);
        attention_probs(ws.probs, qkv, ad, run.policy.bf16);
      }
      attention_backward(ws.d_qkv, d_atty, qkv, probs, ad, region_drop.attn, ws.attention);
    }
  }
  T* d_ln1 = column_backward_enter(ws.d_ln, g.qkv_w, g.qkv_b, ws.d_qkv, hooks.region_input(ln1, ws.full_a, d), w.qkv_w,
                                   N, C, 3 * CL, dr, 3 * d.HD, hooks, ledger);
  layernorm_backward(ws.d_res, g.ln1_w, g.ln1_b, d_ln1, x, w.ln1_w, rec.ln1_mean.data(), rec.ln1_rstd.data(), R, C,
                     d.split, sums ? sums->ln1_w : nullptr, sums ? sums->ln1_b : nullptr);  // ws.d_res = d(x)
  rec.release_all_but_input();
  rec.x.release();
}

#define SHARDLAB_BLOCK(T)                                                                                              \
  template void allocate_block_record<T>(BlockRecord<T>&, const BlockDims&, const ActivationPolicy&, MemoryLedger&);   \
  template void block_forward<T>(BlockRecord<T>&, T*, const BlockTensors<const T*>&, const BlockDims&,                 \
                                 const BlockRun&, BlockScratch<T>&, RegionHooks<T>&, MemoryLedger&);                   \
  template void block_backward<T>(BlockTensors<T*>&, const BlockTensors<const T*>&, BlockRecord<T>&, const BlockDims&, \
                                  const BlockRun&, BlockScratch<T>&, RegionHooks<T>&, MemoryLedger&,                   \
                                  const BlockTensors<ExactSum*>*);
SHARDLAB_BLOCK(float)
SHARDLAB_BLOCK(double)
#undef SHARDLAB_BLOCK

}  // namespace shardlab
