// Blocks, chunks and activation records (model/block.h, model/model_chunk.h):
//  - recompute none / selective / full and naive / flash: the same loss and bit-identical gradients
//    (f32 and f64, dropout on), flash equal to naive to 1e-12 in f64;
//  - several micro-batches in flight: forwards 0, 1, 2 then backwards 0, 1, 2 give bit for bit the
//    gradients of one after another; backwards in reverse order agree to rounding;
//  - a slice with global offsets (heads [h0, …), positions [t0, …)) draws exactly the whole model's
//    dropout masks for that slice;
//  - the ledger's activation items equal the itemised formula (plan/activation_items.h) for several
//    (s, b, h, a), widths (f32, f64, bf16) and policies, and the activation peak equals its formula.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <vector>

#include "../common/worst.h"
#include "core/rng.h"
#include "model/attention.h"
#include "model/dropout.h"
#include "model/model_chunk.h"
#include "optim/model_states.h"
#include "plan/activation_items.h"
#include "train/train_config.h"

using namespace shardlab;

namespace {

GPTConfig tiny(double dropout = 0.1) {
  GPTConfig c;
  c.layers = 2;
  c.hidden = 32;
  c.heads = 4;
  c.seq = 80;  // two attention row blocks, the second partial
  c.vocab = 64;
  c.dropout = dropout;
  return c;
}

template <class T>
struct Run {
  double loss = 0;
  std::vector<T> grads;
};

// One step's forward and backward of `micro` micro-batches of 2 samples on fixed weights, in `order`
// (forward all, then backward in the given order), with a policy.
template <class T>
Run<T> run(const GPTConfig& cfg, ActivationPolicy policy, int micro, const std::vector<int>& backward_order,
           bool interleave = false) {
  ParamLayout layout(cfg);
  MemoryLedger ledger;
  // 64-byte aligned like the trainer's stores: vectorised sums round by alignment (core/ledger.h).
  Buffer<T> params(ledger, Mem::param, layout.total()), grads(ledger, Mem::grad, layout.total());
  init_params(layout, cfg, 7, params.data(), 0, layout.total());
  const int B = 2, Tn = cfg.seq;
  std::vector<int32_t> in(size_t(micro) * B * Tn), tg(in.size());
  RngStream r = rng_stream(3, "tokens");
  for (size_t i = 0; i < in.size(); ++i) {
    in[i] = int32_t(r.below(2 * i, cfg.vocab));
    tg[i] = int32_t(r.below(2 * i + 1, cfg.vocab));
  }
  ModelChunk<T> chunk(cfg, layout, ChunkSpec::whole(cfg), B, policy, ledger);
  FlatAccess<T> access(layout, params.data(), grads.data());
  const T scale = T(1) / T(micro * B * Tn);
  Run<T> out;
  auto fwd = [&](int k) {
    MicroBatch mb{k, B, in.data() + size_t(k) * B * Tn, tg.data() + size_t(k) * B * Tn, {11, 5, uint64_t(k * B)}, true};
    out.loss += chunk.forward(mb, access);
  };
  if (interleave) {
    for (int k = 0; k < micro; ++k) {
      fwd(k);
      chunk.backward(k, access, scale);
    }
  } else {
    for (int k = 0; k < micro; ++k) fwd(k);
    CHECK(chunk.in_flight() == micro);
    for (int k : backward_order) chunk.backward(k, access, scale);
  }
  CHECK(chunk.in_flight() == 0);
  CHECK(ledger.current(Mem::activation) == 0);  // every record released after its backward
  out.grads.assign(grads.data(), grads.data() + grads.size());
  return out;
}

template <class T>
bool bitwise_equal(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

template <class T>
double max_rel(const std::vector<T>& a, const std::vector<T>& b) {
  double worst = 0, scale = 0;
  for (T x : a) scale = test::worst_of(scale, double(std::fabs(x)));
  for (size_t i = 0; i < a.size(); ++i) worst = test::worst_of(worst, std::fabs(double(a[i]) - double(b[i])) / scale);
  return worst;
}

template <class T>
void recompute_case(AttentionKernel kernel, bool bf16) {
  const GPTConfig cfg = tiny();
  const Run<T> none = run<T>(cfg, {bf16, Recompute::none, kernel}, 1, {0});
  for (Recompute rc : {Recompute::selective, Recompute::full}) {
    INFO("attention " << attention_name(kernel) << ", recompute " << recompute_name(rc) << ", bf16 " << bf16);
    const Run<T> other = run<T>(cfg, {bf16, rc, kernel}, 1, {0});
    CHECK(other.loss == none.loss);
    CHECK(bitwise_equal(other.grads, none.grads));
  }
}

}  // namespace

TEST_CASE("recompute none, selective and full give bit-identical gradients", "[activations][recompute]") {
  for (AttentionKernel k : {AttentionKernel::naive, AttentionKernel::flash}) {
    recompute_case<double>(k, false);
    recompute_case<float>(k, false);
    recompute_case<float>(k, true);
  }
}

TEST_CASE("flash attention trains like naive attention (f64, 1e-12)", "[activations][flash]") {
  const GPTConfig cfg = tiny();
  const Run<double> naive = run<double>(cfg, {false, Recompute::none, AttentionKernel::naive}, 1, {0});
  const Run<double> flash = run<double>(cfg, {false, Recompute::none, AttentionKernel::flash}, 1, {0});
  CHECK(std::fabs(naive.loss - flash.loss) <= 1e-12 * std::fabs(naive.loss));
  CHECK(max_rel(naive.grads, flash.grads) <= 1e-12);
  CHECK(!bitwise_equal(naive.grads, flash.grads));  // another order of sums: a real comparison
}

TEST_CASE("several micro-batches in flight give the gradients of one after another", "[activations][chunk]") {
  const GPTConfig cfg = tiny();
  for (ActivationPolicy p : {ActivationPolicy{}, ActivationPolicy{false, Recompute::full, AttentionKernel::flash}}) {
    const Run<double> sequential = run<double>(cfg, p, 3, {}, /*interleave=*/true);
    const Run<double> fifo = run<double>(cfg, p, 3, {0, 1, 2});
    CHECK(fifo.loss == sequential.loss);
    CHECK(bitwise_equal(fifo.grads, sequential.grads));  // the same micro-batch order of accumulation
    const Run<double> reversed = run<double>(cfg, p, 3, {2, 1, 0});
    CHECK(max_rel(reversed.grads, sequential.grads) <= 1e-14);
  }
}

TEST_CASE("a slice with global offsets draws the whole model's dropout masks", "[activations][dropout]") {
  const int B = 2, T = 70, C = 24, NH = 6, HD = C / NH;
  const double p = 0.3;
  MemoryLedger ledger;  // aligned buffers (vectorised sums round by alignment), as the model's are
  auto buffer = [&](size_t n) { return Buffer<double>(ledger, Mem::workspace, n); };
  Buffer<double> qkv = buffer(size_t(B) * T * 3 * C);
  RngStream r = rng_stream(9, "slice");
  for (size_t i = 0; i < qkv.size(); ++i) qkv[i] = r.normal(i);
  // The whole attention: every head.
  const Dropout whole = Dropout::make(p, 4, "dropout:attn", 2, 1, /*first_sample=*/6, T, C, NH);
  Buffer<double> out = buffer(size_t(B) * T * C), probs = buffer(size_t(B) * NH * T * T),
                 scratch = buffer(2 * size_t(T) * T);
  attention_forward(out.data(), probs.data(), qkv.data(), AttentionDims{B, T, C, NH}, whole, scratch.data());
  // Heads [2, 5) alone, as a tensor-parallel rank holds them: their q, k, v columns, first_head = 2.
  const int h0 = 2, nh = 3, CL = nh * HD;
  Buffer<double> qkv_s = buffer(size_t(B) * T * 3 * CL), out_s = buffer(size_t(B) * T * CL),
                 probs_s = buffer(size_t(B) * nh * T * T);
  for (size_t row = 0; row < size_t(B) * T; ++row)
    std::memcpy(&qkv_s[row * 3 * CL], &qkv[row * 3 * C + h0 * 3 * HD], 3 * CL * sizeof(double));
  const Dropout slice = Dropout::make(p, 4, "dropout:attn", 2, 1, 6, T, C, NH, /*first_head=*/h0);
  attention_forward(out_s.data(), probs_s.data(), qkv_s.data(), AttentionDims{B, T, CL, nh}, slice, scratch.data());
  // The slice's mask is the whole mask of those heads, element by element.
  bool same_mask = true;
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < nh; ++h)
      for (size_t e = 0; e < size_t(T) * T; ++e)
        same_mask = same_mask && (slice.rng.uniform(slice.attention_index(b, h, e)) < p) ==
                                     (whole.rng.uniform(whole.attention_index(b, h0 + h, e)) < p);
  CHECK(same_mask);
  // And its output is those heads' columns of the whole output (to rounding: BLAS may sum a product of
  // other strides in another order).
  double worst = 0, scale = 0;
  for (size_t row = 0; row < size_t(B) * T; ++row)
    for (int c = 0; c < CL; ++c) {
      worst = test::worst_of(worst, std::fabs(out_s[row * CL + c] - out[row * C + h0 * HD + c]));
      scale = test::worst_of(scale, std::fabs(out[row * C + h0 * HD + c]));
    }
  CHECK(worst <= 1e-14 * scale);
  // Rows [30, 50) of each sample, as a sequence-parallel rank holds them: first_row = 30.
  const int t0 = 30, Tl = 20;
  std::vector<double> act(size_t(B) * T * C, 1.0), act_s(size_t(B) * Tl * C, 1.0);
  const Dropout act_whole = Dropout::make(p, 4, "dropout:mlp", 2, 1, 6, T, C, NH);
  const Dropout act_slice = Dropout::make(p, 4, "dropout:mlp", 2, 1, 6, T, C, NH, 0, /*first_row=*/t0);
  act_whole.apply_activation(act.data(), B);
  act_slice.apply_activation(act_s.data(), B, Tl);
  bool same_rows = true;
  int dropped = 0;
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < Tl; ++t)
      for (int c = 0; c < C; ++c) {
        const double v = act_s[(size_t(b) * Tl + t) * C + c];
        same_rows = same_rows && v == act[(size_t(b) * T + t0 + t) * C + c];
        dropped += v == 0;
      }
  CHECK(same_rows);
  CHECK(dropped > 0);  // the mask does drop something
}

TEST_CASE("the ledger's activation items equal the itemised formula", "[activations][ledger]") {
  struct Case {
    int seq, B, hidden, heads;
    const char* dtype;
    ActivationPolicy policy;
  };
  const Case cases[] = {{64, 2, 32, 4, "f32", {}},
                        {96, 3, 48, 6, "f64", {false, Recompute::selective, AttentionKernel::naive}},
                        {80, 1, 32, 2, "bf16", {true, Recompute::full, AttentionKernel::naive}},
                        {130, 2, 32, 4, "bf16", {true, Recompute::none, AttentionKernel::flash}},
                        {64, 4, 16, 2, "f32", {false, Recompute::full, AttentionKernel::flash}}};
  for (const Case& k : cases) {
    INFO("s " << k.seq << " b " << k.B << " h " << k.hidden << " a " << k.heads << " " << k.dtype << " "
              << recompute_name(k.policy.recompute) << " " << attention_name(k.policy.attention));
    GPTConfig cfg = tiny(0.0);
    cfg.seq = k.seq;
    cfg.hidden = k.hidden;
    cfg.heads = k.heads;
    ParamLayout layout(cfg);
    MemoryLedger ledger;
    const bool f64 = std::string(k.dtype) == "f64";
    std::vector<double> pd(layout.total()), gd(layout.total());
    std::vector<float> pf(layout.total()), gf(layout.total());
    init_params(layout, cfg, 1, pd.data(), 0, layout.total());
    init_params(layout, cfg, 1, pf.data(), 0, layout.total());
    std::vector<int32_t> in(size_t(k.B) * k.seq, 5), tg(in.size(), 7);
    const int micro = 2;
    if (f64) {
      ModelChunk<double> chunk(cfg, layout, ChunkSpec::whole(cfg), k.B, k.policy, ledger);
      FlatAccess<double> a(layout, pd.data(), gd.data());
      for (int m = 0; m < micro; ++m) {
        chunk.forward(MicroBatch{m, k.B, in.data(), tg.data(), {}, true}, a);
        chunk.backward(m, a, 1.0);
      }
    } else {
      ModelChunk<float> chunk(cfg, layout, ChunkSpec::whole(cfg), k.B, k.policy, ledger);
      FlatAccess<float> a(layout, pf.data(), gf.data());
      for (int m = 0; m < micro; ++m) {
        chunk.forward(MicroBatch{m, k.B, in.data(), tg.data(), {}, true}, a);
        chunk.backward(m, a, 1.0f);
      }
    }
    plan::ActivationShape s;
    s.seq = k.seq;
    s.micro_batch = k.B;
    s.hidden = k.hidden;
    s.heads = k.heads;
    s.layers = cfg.layers;
    s.vocab = cfg.vocab;
    s.width = k.policy.bf16 ? 2 : f64 ? 8 : 4;
    s.stat_width = f64 ? 8 : 4;
    s.attention = k.policy.attention;
    s.recompute = k.policy.recompute;
    std::vector<plan::ActivationItem> items = plan::block_items(s);
    for (const plan::ActivationItem& i : plan::head_items(s)) items.push_back(i);
    size_t matched = 0;
    for (const plan::ActivationItem& i : items) {
      INFO(i.name);
      REQUIRE(ledger.items().count(i.name));
      const LedgerItem& it = ledger.items().at(i.name);
      CHECK(it.uniform);
      CHECK(it.last_bytes == i.bytes);
      const size_t per_step = i.name.rfind("head.", 0) == 0 ? 1 : size_t(cfg.layers);
      const size_t twice =
          k.policy.recompute == Recompute::full && i.name != "block.x" && i.name.rfind("head.", 0) ? 2 : 1;
      CHECK(it.allocations == micro * per_step * twice);
      matched += it.last_bytes == i.bytes;
    }
    size_t activation_items = 0;  // nothing in the ledger that the formula lacks
    for (const auto& [name, it] : ledger.items())
      activation_items += name.rfind("block.", 0) == 0 || name.rfind("head.", 0) == 0;
    CHECK(activation_items == items.size());
    CHECK(matched == items.size());
    CHECK(ledger.peak(Mem::activation) == plan::activation_peak(s, cfg.layers, true));
  }
}
