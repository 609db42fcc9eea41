// GPT forward/backward: the composition of the layer pairs in src/model (see gpt.h).
#include "model/gpt.h"

#include <algorithm>
#include <cstring>

#include "model/attention.h"
#include "model/cross_entropy.h"
#include "model/dropout.h"
#include "model/embedding.h"
#include "model/gelu.h"
#include "model/layernorm.h"
#include "model/linear.h"

namespace shardlab {

template <class T>
GPT<T>::GPT(const GPTConfig& cfg, const ParamLayout& layout, int micro_batch, MemoryLedger& ledger)
    : cfg_(cfg), layout_(layout), B_(micro_batch) {
  const size_t N = static_cast<size_t>(B_) * cfg.seq, C = cfg.hidden, V = cfg.vocab;
  const size_t TT = static_cast<size_t>(cfg.seq) * cfg.seq;
  const Mem A = Mem::activation;
  for (int l = 0; l <= cfg.layers; ++l) residual_.emplace_back(ledger, A, N * C);
  for (int l = 0; l < cfg.layers; ++l) {
    LayerActs a;
    a.ln1 = Buffer<T>(ledger, A, N * C);
    a.ln1_mean = Buffer<T>(ledger, A, N);
    a.ln1_rstd = Buffer<T>(ledger, A, N);
    a.qkv = Buffer<T>(ledger, A, N * 3 * C);
    a.probs = Buffer<T>(ledger, A, static_cast<size_t>(B_) * cfg.heads * TT);
    a.atty = Buffer<T>(ledger, A, N * C);
    a.resid_mid = Buffer<T>(ledger, A, N * C);
    a.ln2 = Buffer<T>(ledger, A, N * C);
    a.ln2_mean = Buffer<T>(ledger, A, N);
    a.ln2_rstd = Buffer<T>(ledger, A, N);
    a.fc = Buffer<T>(ledger, A, N * 4 * C);
    a.gelu = Buffer<T>(ledger, A, N * 4 * C);
    acts_.push_back(std::move(a));
  }
  lnf_ = Buffer<T>(ledger, A, N * C);
  lnf_mean_ = Buffer<T>(ledger, A, N);
  lnf_rstd_ = Buffer<T>(ledger, A, N);
  logits_ = Buffer<T>(ledger, A, N * V);
  const Mem W = Mem::workspace;
  d_res_ = Buffer<T>(ledger, W, N * C);
  d_tmp_ = Buffer<T>(ledger, W, N * C);
  d_ln_ = Buffer<T>(ledger, W, N * C);
  d_qkv_ = Buffer<T>(ledger, W, N * 3 * C);
  d_fc_ = Buffer<T>(ledger, W, N * 4 * C);
  d_gelu_ = Buffer<T>(ledger, W, N * 4 * C);
  att_scratch_ = Buffer<T>(ledger, W, 2 * TT);
}

namespace {
// Addresses one unit's tensors by their flat-layout offsets.
template <class T>
struct UnitPtr {
  T* base;
  size_t begin;
  T* operator()(size_t offset) const { return base + (offset - begin); }
};
}  // namespace

template <class T>
double GPT<T>::forward(UnitAccess<T>& access, const int32_t* inputs, const int32_t* targets, bool train,
                       const DropoutContext& drop, int batch) {
  if (batch < 0 || batch > B_) batch = B_;
  used_ = batch;
  const int B = batch, Tn = cfg_.seq, C = cfg_.hidden, V = cfg_.vocab, NH = cfg_.heads;
  const int N = B * Tn;
  inputs_.assign(inputs, inputs + N);
  targets_.assign(targets, targets + N);
  drop_ = drop;
  train_ = train;
  const double p = train ? cfg_.dropout : 0.0;
  const AttentionDims dims{B, Tn, C, NH};

  const int head = cfg_.layers + 1;
  auto params = [&](int u) { return UnitPtr<const T>{access.params(u, false), layout_.unit_begin(u)}; };
  UnitPtr<const T> P = params(0);
  embedding_forward(residual_[0].data(), inputs, P(layout_.tok_emb), P(layout_.pos_emb), B, Tn, C);
  access.params_done(0, false);
  for (int l = 0; l < cfg_.layers; ++l) {
    const BlockOffsets& w = layout_.blocks[l];
    P = params(l + 1);
    LayerActs& a = acts_[l];
    const T* x = residual_[l].data();
    T* out = residual_[l + 1].data();
    Dropout d_attn = Dropout::make(p, drop.seed, "dropout:attn", drop.step, l, drop.first_sample, Tn, C, NH);
    Dropout d_proj = Dropout::make(p, drop.seed, "dropout:proj", drop.step, l, drop.first_sample, Tn, C, NH);
    Dropout d_mlp = Dropout::make(p, drop.seed, "dropout:mlp", drop.step, l, drop.first_sample, Tn, C, NH);

    layernorm_forward(a.ln1.data(), a.ln1_mean.data(), a.ln1_rstd.data(), x, P(w.ln1_w), P(w.ln1_b), N, C);
    linear_forward(a.qkv.data(), a.ln1.data(), P(w.qkv_w), P(w.qkv_b), N, C, 3 * C);
    attention_forward(a.atty.data(), a.probs.data(), a.qkv.data(), dims, d_attn, att_scratch_.data());
    linear_forward(a.resid_mid.data(), a.atty.data(), P(w.proj_w), P(w.proj_b), N, C, C);
    if (d_proj.active()) d_proj.apply_activation(a.resid_mid.data(), B);
    MatMap<T>(a.resid_mid.data(), N, C) += ConstMatMap<T>(x, N, C);  // residual 1

    layernorm_forward(a.ln2.data(), a.ln2_mean.data(), a.ln2_rstd.data(), a.resid_mid.data(), P(w.ln2_w), P(w.ln2_b), N,
                      C);
    linear_forward(a.fc.data(), a.ln2.data(), P(w.fc_w), P(w.fc_b), N, C, 4 * C);
    gelu_forward(a.gelu.data(), a.fc.data(), static_cast<size_t>(N) * 4 * C);
    linear_forward(out, a.gelu.data(), P(w.fcproj_w), P(w.fcproj_b), N, 4 * C, C);
    if (d_mlp.active()) d_mlp.apply_activation(out, B);
    MatMap<T>(out, N, C) += ConstMatMap<T>(a.resid_mid.data(), N, C);  // residual 2
    access.params_done(l + 1, false);
  }
  P = params(head);
  layernorm_forward(lnf_.data(), lnf_mean_.data(), lnf_rstd_.data(), residual_[cfg_.layers].data(), P(layout_.lnf_w),
                    P(layout_.lnf_b), N, C);
  linear_forward(logits_.data(), lnf_.data(), P(layout_.lm_head), static_cast<const T*>(nullptr), N, C, V);
  access.params_done(head, false);
  return cross_entropy_forward(logits_.data(), targets, N, V);
}

template <class T>
void GPT<T>::backward(UnitAccess<T>& access, T loss_scale) {
  const int B = used_, Tn = cfg_.seq, C = cfg_.hidden, V = cfg_.vocab, NH = cfg_.heads;
  const int N = B * Tn;
  const double p = train_ ? cfg_.dropout : 0.0;
  const AttentionDims dims{B, Tn, C, NH};
  const DropoutContext& drop = drop_;

  const int head = cfg_.layers + 1;
  auto params = [&](int u) { return UnitPtr<const T>{access.params(u, true), layout_.unit_begin(u)}; };
  auto grads = [&](int u) { return UnitPtr<T>{access.grads(u), layout_.unit_begin(u)}; };
  auto done = [&](int u) {
    access.params_done(u, true);
    access.grads_done(u);
  };

  UnitPtr<const T> P = params(head);
  UnitPtr<T> G = grads(head);
  cross_entropy_backward(logits_.data(), targets_.data(), N, V, loss_scale);  // logits_ now holds d_logits
  linear_backward(d_ln_.data(), G(layout_.lm_head), static_cast<T*>(nullptr), logits_.data(), lnf_.data(),
                  P(layout_.lm_head), N, C, V);
  d_res_.zero();
  layernorm_backward(d_res_.data(), G(layout_.lnf_w), G(layout_.lnf_b), d_ln_.data(), residual_[cfg_.layers].data(),
                     P(layout_.lnf_w), lnf_mean_.data(), lnf_rstd_.data(), N, C);
  done(head);

  for (int l = cfg_.layers - 1; l >= 0; --l) {  // d_res_ holds d(output of block l)
    const BlockOffsets& w = layout_.blocks[l];
    P = params(l + 1);
    G = grads(l + 1);
    LayerActs& a = acts_[l];
    Dropout d_attn = Dropout::make(p, drop.seed, "dropout:attn", drop.step, l, drop.first_sample, Tn, C, NH);
    Dropout d_proj = Dropout::make(p, drop.seed, "dropout:proj", drop.step, l, drop.first_sample, Tn, C, NH);
    Dropout d_mlp = Dropout::make(p, drop.seed, "dropout:mlp", drop.step, l, drop.first_sample, Tn, C, NH);

    // MLP branch: out = resid_mid + drop(fcproj(gelu(fc(ln2(resid_mid)))))
    const T* d_mlp_out = d_res_.data();
    if (d_mlp.active()) {
      std::memcpy(d_tmp_.data(), d_res_.data(), d_res_.bytes());
      d_mlp.apply_activation(d_tmp_.data(), B);
      d_mlp_out = d_tmp_.data();
    }
    linear_backward(d_gelu_.data(), G(w.fcproj_w), G(w.fcproj_b), d_mlp_out, a.gelu.data(), P(w.fcproj_w), N, 4 * C, C);
    gelu_backward(d_fc_.data(), d_gelu_.data(), a.fc.data(), static_cast<size_t>(N) * 4 * C);
    linear_backward(d_ln_.data(), G(w.fc_w), G(w.fc_b), d_fc_.data(), a.ln2.data(), P(w.fc_w), N, C, 4 * C);
    layernorm_backward(d_res_.data(), G(w.ln2_w), G(w.ln2_b), d_ln_.data(), a.resid_mid.data(), P(w.ln2_w),
                       a.ln2_mean.data(), a.ln2_rstd.data(), N, C);  // d_res_ = d(resid_mid)

    // Attention branch: resid_mid = x + drop(proj(attention(qkv(ln1(x)))))
    const T* d_proj_out = d_res_.data();
    if (d_proj.active()) {
      std::memcpy(d_tmp_.data(), d_res_.data(), d_res_.bytes());
      d_proj.apply_activation(d_tmp_.data(), B);
      d_proj_out = d_tmp_.data();
    }
    T* d_atty = d_fc_.data();  // reuse: (N, C) fits in (N, 4C)
    linear_backward(d_atty, G(w.proj_w), G(w.proj_b), d_proj_out, a.atty.data(), P(w.proj_w), N, C, C);
    attention_backward(d_qkv_.data(), d_atty, a.qkv.data(), a.probs.data(), dims, d_attn, att_scratch_.data());
    linear_backward(d_ln_.data(), G(w.qkv_w), G(w.qkv_b), d_qkv_.data(), a.ln1.data(), P(w.qkv_w), N, C, 3 * C);
    layernorm_backward(d_res_.data(), G(w.ln1_w), G(w.ln1_b), d_ln_.data(), residual_[l].data(), P(w.ln1_w),
                       a.ln1_mean.data(), a.ln1_rstd.data(), N, C);  // d_res_ = d(x)
    done(l + 1);
  }
  P = params(0);  // the embedding backward reads no weights, but a unit is gathered for its backward all the same
  G = grads(0);
  embedding_backward(G(layout_.tok_emb), G(layout_.pos_emb), d_res_.data(), inputs_.data(), B, Tn, C);
  done(0);
}

template class GPT<float>;
template class GPT<double>;

}  // namespace shardlab
