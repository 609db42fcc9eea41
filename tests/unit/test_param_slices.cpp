// Tensor-parallel slices, single process (model/param_layout.h, claim C17):
//  - for t in {2, 4} and every tp rank r, ParamLayout(cfg, {t, r}) holds the whole model's tensors in the
//    whole model's order, under the same names, with Megatron's local shapes; init_params of it equals,
//    element by element and bit for bit, the whole model's init at the element's GLOBAL index — the index
//    computed here from the partition rules written out (heads' rows of QKV, their columns of W^O, a
//    quarter of the MLP width, …), not through for_each_run;
//  - place_slices of all t ranks' stores rebuilds the whole store exactly (8-, 4- and 2-byte elements,
//    every element distinct, so a misplaced or missing run shows);
//  - Ψ_t of the local layout = plan::tp_param_count, and the layout's tensors are plan::tp_tensor_runs;
//  - replicated() flags exactly the embeddings, the LayerNorms, attn.proj.bias, mlp.proj.bias and ln_f
//    (lm_head is vocabulary-parallel: rows [r·V/t, (r+1)·V/t)); the sequence-parallel flag changes no tensor;
//  - column-parallel fc + GELU and row-parallel fc-proj against the unsharded layers in f64 (≤ 1e-12),
//    forward and backward: concatenated outputs, Σ of partial sums, Σ of partial input gradients, weight
//    gradients that are slices of the unsharded ones;
//  - attention on a subset of heads (dropout on, masks drawn from first_head) equals those heads' columns
//    of the whole attention, forward and backward, for every rank of t = 2 and 4 — so a head slice draws
//    the whole model's masks (and with the wrong first_head it would not).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "../common/worst.h"
#include "core/rng.h"
#include "model/attention.h"
#include "model/config.h"
#include "model/dropout.h"
#include "model/gelu.h"
#include "model/linear.h"
#include "model/param_layout.h"
#include "plan/state_bytes.h"
#include "plan/tp_bytes.h"

using namespace shardlab;

namespace {

// Not square anywhere: C = 24 (4 heads of 6), V = 20, T = 5, so a transposed index would show.
GPTConfig slice_config() {
  GPTConfig c;
  c.layers = 2;
  c.hidden = 24;
  c.heads = 4;
  c.seq = 5;
  c.vocab = 20;  // divisible by t = 2 and 4: the LM head's vocabulary rows
  return c;
}

bool ends_with(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// Megatron's partition of one tensor for tp rank r of t, written out from the model (not from the layout):
//   attn.qkv   rows of this rank's heads: head h owns rows [3·HD·h, 3·HD·(h+1)) ([q_h | k_h | v_h])
//   attn.proj  the columns that multiply those heads: [HD·h0, HD·(h0 + NH/t))
//   mlp.fc     rows [r·4C/t, (r+1)·4C/t);  mlp.proj the same columns
//   lm_head    rows [r·V/t, (r+1)·V/t)     (the vocabulary-parallel head)
// and every other tensor whole on every rank.
struct Part {
  enum Kind { whole, rows, cols } kind = whole;
  int64_t first = 0;  // first row / column of the whole tensor
  int64_t count = 0;  // rows / columns held
};
Part partition(const std::string& name, const GPTConfig& cfg, int t, int r) {
  const int64_t C = cfg.hidden, HD = C / cfg.heads, nh = cfg.heads / t, h0 = nh * r, F = 4 * C / t;
  if (ends_with(name, ".attn.qkv.weight") || ends_with(name, ".attn.qkv.bias"))
    return {Part::rows, 3 * HD * h0, 3 * HD * nh};
  if (ends_with(name, ".attn.proj.weight")) return {Part::cols, HD * h0, HD * nh};
  if (ends_with(name, ".mlp.fc.weight") || ends_with(name, ".mlp.fc.bias")) return {Part::rows, F * r, F};
  if (ends_with(name, ".mlp.proj.weight")) return {Part::cols, F * r, F};
  if (name == "lm_head.weight") return {Part::rows, cfg.vocab / t * r, cfg.vocab / t};
  return {};
}

// The tensors the issue says are replicated on every tp rank.
bool expect_replicated(const std::string& n) {
  return n == "tok_emb" || n == "pos_emb" || ends_with(n, ".ln1.weight") || ends_with(n, ".ln1.bias") ||
         ends_with(n, ".ln2.weight") || ends_with(n, ".ln2.bias") || ends_with(n, ".attn.proj.bias") ||
         ends_with(n, ".mlp.proj.bias") || n == "ln_f.weight" || n == "ln_f.bias";
}

// Shape of the whole tensor (from the unsliced layout), as (rows, cols); a vector is (n, 1).
struct Shape2 {
  int64_t rows, cols;
};
Shape2 shape2(const std::vector<int64_t>& s) { return {s[0], s.size() > 1 ? s[1] : 1}; }

// Index in the whole tensor of local element k (row-major) of the part p of a whole tensor of shape w.
size_t whole_index(const Part& p, Shape2 w, size_t k) {
  switch (p.kind) {
    case Part::whole: return k;
    case Part::rows: return static_cast<size_t>(p.first) * w.cols + k;  // whole rows: contiguous
    case Part::cols: {
      const size_t row = k / p.count, col = k % p.count;
      return row * w.cols + p.first + col;
    }
  }
  return 0;
}

// Local shape the partition gives.
std::vector<int64_t> local_shape(const Part& p, const std::vector<int64_t>& whole) {
  std::vector<int64_t> s = whole;
  if (p.kind == Part::rows) s[0] = p.count;
  if (p.kind == Part::cols) s[1] = p.count;
  return s;
}

// One rank's local store cut out of a whole store by the partition rules above.
template <class E>
std::vector<E> cut_local(const ParamLayout& local, const ParamLayout& whole, const std::vector<E>& w, int t, int r,
                         const GPTConfig& cfg) {
  std::vector<E> out(local.total());
  for (const TensorSpec& s : local.tensors()) {
    const TensorSpec& ws = whole.find(s.name);
    const Part p = partition(s.name, cfg, t, r);
    for (size_t k = 0; k < s.numel; ++k) out[s.offset + k] = w[ws.offset + whole_index(p, shape2(ws.shape), k)];
  }
  return out;
}

template <class E>
bool bitwise_equal(const std::vector<E>& a, const std::vector<E>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(E)) == 0;
}

// max |a - b| / max |b| (b the unsharded reference), and a fill helper.
double rel_diff(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = test::worst_of(diff, std::fabs(a[i] - b[i]));
    scale = test::worst_of(scale, std::fabs(b[i]));
  }
  return diff == 0 ? 0 : scale == 0 ? std::numeric_limits<double>::infinity() : diff / scale;
}
std::vector<double> randn(size_t n, const char* what, double scale = 1.0) {
  const RngStream rng = rng_stream(2024, what);
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * rng.normal(i);
  return v;
}

// Columns [c0, c0 + nc) of a (rows, cols) row-major matrix, and the reverse (into dst's columns).
std::vector<double> columns(const std::vector<double>& m, size_t rows, size_t cols, size_t c0, size_t nc) {
  std::vector<double> out(rows * nc);
  for (size_t i = 0; i < rows; ++i)
    for (size_t j = 0; j < nc; ++j) out[i * nc + j] = m[i * cols + c0 + j];
  return out;
}
void put_columns(std::vector<double>& dst, size_t rows, size_t cols, size_t c0, const std::vector<double>& part,
                 size_t nc) {
  for (size_t i = 0; i < rows; ++i)
    for (size_t j = 0; j < nc; ++j) dst[i * cols + c0 + j] = part[i * nc + j];
}
std::vector<double> rows_of(const std::vector<double>& m, size_t cols, size_t r0, size_t nr) {
  return std::vector<double>(m.begin() + r0 * cols, m.begin() + (r0 + nr) * cols);
}

}  // namespace

TEST_CASE("tp slices: each rank's layout and init are the whole model's at the global indices", "[tp][layout]") {
  const GPTConfig cfg = slice_config();
  const ParamLayout whole(cfg);
  std::vector<double> w(whole.total());
  init_params(whole, cfg, 77, w.data(), 0, w.size());
  for (int t : {2, 4}) {
    REQUIRE(ModelSlice{t, 0}.validate(cfg).empty());
    for (int r = 0; r < t; ++r) {
      INFO("t = " << t << ", rank " << r);
      const ParamLayout local(cfg, ModelSlice{t, r});
      REQUIRE(local.tensors().size() == whole.tensors().size());
      std::vector<double> l(local.total(), std::numeric_limits<double>::quiet_NaN());
      init_params(local, cfg, 77, l.data(), 0, l.size());
      size_t offset = 0;
      for (size_t k = 0; k < local.tensors().size(); ++k) {
        const TensorSpec& s = local.tensors()[k];
        const TensorSpec& ws = whole.tensors()[k];
        INFO("tensor " << s.name);
        CHECK(s.name == ws.name);  // the whole model's names, in its order
        const Part p = partition(s.name, cfg, t, r);
        CHECK(s.global_shape == ws.shape);
        CHECK(s.shape == local_shape(p, ws.shape));
        CHECK(s.offset == offset);  // contiguous local layout
        offset += s.numel;
        // Every local element equals the whole init at its global index, bit for bit.
        size_t bad = 0, first_bad = 0;
        for (size_t e = 0; e < s.numel; ++e) {
          const double want = w[ws.offset + whole_index(p, shape2(ws.shape), e)];
          if (std::memcmp(&l[s.offset + e], &want, sizeof want) != 0 && bad++ == 0) first_bad = e;
        }
        INFO(bad << " of " << s.numel << " elements differ from the whole init (first: local element " << first_bad
                 << ")");
        CHECK(bad == 0);
      }
      CHECK(offset == local.total());
    }
  }
}

TEST_CASE("tp slices: place_slices of every rank's store rebuilds the whole store exactly", "[tp][layout]") {
  const GPTConfig cfg = slice_config();
  const ParamLayout whole(cfg);
  const size_t P = whole.total();
  // Every element distinct (its own index, in three widths): a misplaced run cannot go unnoticed.
  std::vector<double> wd(P);
  std::vector<float> wf(P);
  std::vector<uint16_t> wh(P);
  for (size_t i = 0; i < P; ++i) {
    wd[i] = double(i) + 0.25;
    wf[i] = float(i) + 0.5f;
    wh[i] = static_cast<uint16_t>(i * 40503u + 7);  // distinct for i < 2^16 (40503 is odd)
  }
  REQUIRE(P < 65536);
  const uint16_t kUnset = 0xFFFF;  // what the rebuilt bf16 store starts as: no element's value
  REQUIRE(std::count(wh.begin(), wh.end(), kUnset) == 0);
  // The init store too: place_slices of the ranks' init_params = the whole init_params.
  std::vector<double> init(P);
  init_params(whole, cfg, 5, init.data(), 0, P);

  for (int t : {2, 4}) {
    INFO("t = " << t);
    std::vector<double> rd(P, std::numeric_limits<double>::quiet_NaN()), ri(rd);
    std::vector<float> rf(P, std::numeric_limits<float>::quiet_NaN());
    std::vector<uint16_t> rh(P, kUnset);
    size_t local_elements = 0;
    for (int r = 0; r < t; ++r) {
      const ParamLayout local(cfg, ModelSlice{t, r});
      local_elements += local.total();
      const std::vector<double> ld = cut_local(local, whole, wd, t, r, cfg);
      const std::vector<float> lf = cut_local(local, whole, wf, t, r, cfg);
      const std::vector<uint16_t> lh = cut_local(local, whole, wh, t, r, cfg);
      std::vector<double> li(local.total());
      init_params(local, cfg, 5, li.data(), 0, li.size());
      place_slices(local, reinterpret_cast<const unsigned char*>(ld.data()), whole,
                   reinterpret_cast<unsigned char*>(rd.data()), sizeof(double));
      place_slices(local, reinterpret_cast<const unsigned char*>(lf.data()), whole,
                   reinterpret_cast<unsigned char*>(rf.data()), sizeof(float));
      place_slices(local, reinterpret_cast<const unsigned char*>(lh.data()), whole,
                   reinterpret_cast<unsigned char*>(rh.data()), sizeof(uint16_t));
      place_slices(local, reinterpret_cast<const unsigned char*>(li.data()), whole,
                   reinterpret_cast<unsigned char*>(ri.data()), sizeof(double));
    }
    CHECK(bitwise_equal(rd, wd));
    CHECK(bitwise_equal(rf, wf));
    CHECK(bitwise_equal(rh, wh));
    CHECK(bitwise_equal(ri, init));
    // The slices tile each sliced tensor once; replicated tensors are on every rank.
    size_t replicated = 0;
    for (const TensorSpec& s : whole.tensors())
      if (expect_replicated(s.name)) replicated += s.numel;
    CHECK(local_elements == (P - replicated) + size_t(t) * replicated);
  }
}

TEST_CASE("tp slices: Ψ_t is the planner's, and exactly the issue's tensors are replicated", "[tp][layout][plan]") {
  const GPTConfig cfg = slice_config();
  const plan::GptDims dims{uint64_t(cfg.vocab), uint64_t(cfg.seq), uint64_t(cfg.hidden), uint64_t(cfg.layers)};
  CHECK(plan::tp_param_count(dims, 1) == ParamLayout(cfg).total());
  CHECK(plan::tp_param_count(dims, 1) == plan::gpt_param_count(dims));
  for (int t : {2, 4}) {
    const auto runs = plan::tp_tensor_runs(dims, t);
    for (int r = 0; r < t; ++r) {
      INFO("t = " << t << ", rank " << r);
      const ParamLayout local(cfg, ModelSlice{t, r});
      CHECK(local.total() == plan::tp_param_count(dims, t));
      // Ψ_t = V·C + T·C + L·(12C²/t + 7C/t + 6C) + 2C + C·V/t, by hand.
      const size_t V = cfg.vocab, T = cfg.seq, C = cfg.hidden, L = cfg.layers;
      CHECK(local.total() == V * C + T * C + L * (12 * C * C / t + 7 * C / t + 6 * C) + 2 * C + C * V / t);
      REQUIRE(runs.size() == local.tensors().size());
      size_t flagged = 0;
      for (size_t k = 0; k < runs.size(); ++k) {
        const TensorSpec& s = local.tensors()[k];
        INFO("tensor " << s.name);
        CHECK(s.numel == runs[k].first);
        CHECK(s.replicated() == runs[k].second);
        CHECK(s.replicated() == expect_replicated(s.name));
        flagged += s.replicated();
      }
      CHECK(flagged == 2 + 6 * size_t(cfg.layers) + 2);  // embeddings, 6 per block, ln_f ×2
      // Sequence parallelism splits activations, not parameters: the same layout.
      const ParamLayout sp(cfg, ModelSlice{t, r, true});
      REQUIRE(sp.tensors().size() == local.tensors().size());
      bool same = sp.total() == local.total();
      for (size_t k = 0; k < sp.tensors().size(); ++k) {
        const TensorSpec &a = sp.tensors()[k], &b = local.tensors()[k];
        same = same && a.name == b.name && a.shape == b.shape && a.offset == b.offset && a.slice.dim == b.slice.dim &&
               a.slice.start == b.slice.start;
      }
      CHECK(same);
    }
  }
}

TEST_CASE("tp layers: column-parallel fc + GELU and row-parallel fc-proj equal the unsharded MLP (f64)",
          "[tp][layers]") {
  const int N = 7, C = 12, H = 4 * C;  // N rows (B·T), hidden C, MLP width H
  const std::vector<double> X = randn(size_t(N) * C, "X"), A = randn(size_t(H) * C, "A", 0.3), a = randn(H, "a", 0.1),
                            Bw = randn(size_t(C) * H, "B", 0.3), b = randn(C, "b", 0.1),
                            dZ = randn(size_t(N) * C, "dZ");
  // Unsharded: U = X·Aᵀ + a, G = GELU(U), Z = G·Bᵀ + b; and its backward from dZ.
  std::vector<double> U(size_t(N) * H), G(U.size()), Z(size_t(N) * C);
  linear_forward(U.data(), X.data(), A.data(), a.data(), N, C, H);
  gelu_forward(G.data(), U.data(), U.size());
  linear_forward(Z.data(), G.data(), Bw.data(), b.data(), N, H, C);
  std::vector<double> dG(G.size()), dB(Bw.size(), 0.0), db(C, 0.0), dU(U.size()), dX(X.size()), dA(A.size(), 0.0),
      da(H, 0.0);
  linear_backward(dG.data(), dB.data(), db.data(), dZ.data(), G.data(), Bw.data(), N, H, C);
  gelu_backward(dU.data(), dG.data(), U.data(), U.size());
  linear_backward(dX.data(), dA.data(), da.data(), dU.data(), X.data(), A.data(), N, C, H);

  for (int t : {2, 4}) {
    INFO("t = " << t);
    const int F = H / t;
    std::vector<double> G_cat(G.size()), Z_sum(Z.size(), 0.0), dX_sum(dX.size(), 0.0), dG_cat(dG.size());
    double worst_dA = 0, worst_da = 0, worst_dB = 0, one_partial = 0;
    for (int i = 0; i < t; ++i) {
      // Column-parallel fc: A split by output rows, no communication: G_i = GELU(X·A_iᵀ + a_i).
      const std::vector<double> A_i = rows_of(A, C, size_t(i) * F, F), a_i = rows_of(a, 1, size_t(i) * F, F);
      std::vector<double> U_i(size_t(N) * F), G_i(U_i.size());
      linear_forward(U_i.data(), X.data(), A_i.data(), a_i.data(), N, C, F);
      gelu_forward(G_i.data(), U_i.data(), U_i.size());
      put_columns(G_cat, N, H, size_t(i) * F, G_i, F);
      // Row-parallel fc-proj: B split by input columns; Z = Σ_i G_i·B_iᵀ (+ b once, after the sum).
      const std::vector<double> B_i = columns(Bw, C, H, size_t(i) * F, F);
      std::vector<double> Z_i(Z.size());
      linear_forward(Z_i.data(), G_i.data(), B_i.data(), static_cast<const double*>(nullptr), N, F, C);
      for (size_t k = 0; k < Z.size(); ++k) Z_sum[k] += Z_i[k];
      if (i == 0) {  // one rank's partial alone is far from Z: the sum is what makes it right
        std::vector<double> Z0(Z_i);
        for (int n = 0; n < N; ++n)
          for (int c = 0; c < C; ++c) Z0[size_t(n) * C + c] += b[c];
        one_partial = rel_diff(Z0, Z);
      }
      // Backward: g's backward is the identity (every rank gets the whole dZ); the weight gradients are
      // slices of the unsharded ones; f's backward sums the partial input gradients.
      std::vector<double> dG_i(G_i.size()), dB_i(B_i.size(), 0.0), dU_i(U_i.size()), dX_i(X.size()),
          dA_i(A_i.size(), 0.0), da_i(F, 0.0);
      linear_backward(dG_i.data(), dB_i.data(), static_cast<double*>(nullptr), dZ.data(), G_i.data(), B_i.data(), N, F,
                      C);
      put_columns(dG_cat, N, H, size_t(i) * F, dG_i, F);
      gelu_backward(dU_i.data(), dG_i.data(), U_i.data(), U_i.size());
      linear_backward(dX_i.data(), dA_i.data(), da_i.data(), dU_i.data(), X.data(), A_i.data(), N, C, F);
      for (size_t k = 0; k < dX.size(); ++k) dX_sum[k] += dX_i[k];
      worst_dA = test::worst_of(worst_dA, rel_diff(dA_i, rows_of(dA, C, size_t(i) * F, F)));
      worst_da = test::worst_of(worst_da, rel_diff(da_i, rows_of(da, 1, size_t(i) * F, F)));
      worst_dB = test::worst_of(worst_dB, rel_diff(dB_i, columns(dB, C, H, size_t(i) * F, F)));
    }
    for (int n = 0; n < N; ++n)
      for (int c = 0; c < C; ++c) Z_sum[size_t(n) * C + c] += b[c];
    const double e_G = rel_diff(G_cat, G), e_Z = rel_diff(Z_sum, Z), e_dG = rel_diff(dG_cat, dG),
                 e_dX = rel_diff(dX_sum, dX);
    INFO("GELU(X·A_iᵀ) concatenated " << e_G << ", Σ partials " << e_Z << ", dG " << e_dG << ", Σ dX_i " << e_dX
                                      << ", dA_i " << worst_dA << ", da_i " << worst_da << ", dB_i " << worst_dB
                                      << "; one partial alone " << one_partial);
    CHECK(e_G <= 1e-12);
    CHECK(e_Z <= 1e-12);
    CHECK(e_dG <= 1e-12);
    CHECK(e_dX <= 1e-12);
    CHECK(worst_dA <= 1e-12);
    CHECK(worst_da <= 1e-12);
    CHECK(worst_dB <= 1e-12);
    CHECK(one_partial > 1e-2);
  }
}

TEST_CASE("tp layers: attention on a head slice (dropout on) equals those heads of the whole attention",
          "[tp][layers][dropout]") {
  const int B = 2, T = 70, C = 24, NH = 4, HD = C / NH;  // T = 70: two row blocks, the second partial
  const double p = 0.25;
  const uint64_t seed = 31, step = 3, first_sample = 5;
  const int layer = 1;
  const std::vector<double> qkv = randn(size_t(B) * T * 3 * C, "qkv"), d_out = randn(size_t(B) * T * C, "d_out");
  std::vector<double> out(size_t(B) * T * C), probs(size_t(B) * NH * T * T), scratch(2 * size_t(T) * T),
      d_qkv(qkv.size()), plain(out.size());
  const Dropout whole = Dropout::make(p, seed, "dropout:attn", step, layer, first_sample, T, C, NH);
  attention_forward(out.data(), probs.data(), qkv.data(), AttentionDims{B, T, C, NH}, whole, scratch.data());
  attention_backward(d_qkv.data(), d_out.data(), qkv.data(), probs.data(), AttentionDims{B, T, C, NH}, whole,
                     scratch.data());
  {  // dropout really acts: without it the output differs
    std::vector<double> probs2(probs.size());
    attention_forward(plain.data(), probs2.data(), qkv.data(), AttentionDims{B, T, C, NH}, Dropout{}, scratch.data());
    CHECK(rel_diff(plain, out) > 1e-2);
  }
  const size_t rows = size_t(B) * T;
  for (int t : {2, 4}) {
    const int nh = NH / t, CL = nh * HD;
    for (int r = 0; r < t; ++r) {
      INFO("t = " << t << ", rank " << r);
      const int h0 = r * nh;  // this rank's first head
      // This rank's qkv: the columns of heads [h0, h0 + nh) of every row ([q_h | k_h | v_h] per head).
      const std::vector<double> qkv_s = columns(qkv, rows, 3 * size_t(C), 3 * size_t(HD) * h0, 3 * size_t(CL));
      const std::vector<double> d_out_s = columns(d_out, rows, C, size_t(HD) * h0, CL);
      std::vector<double> out_s(rows * CL), probs_s(size_t(B) * nh * T * T), d_qkv_s(qkv_s.size());
      const Dropout slice =
          Dropout::make(p, seed, "dropout:attn", step, layer, first_sample, T, C, NH, /*first_head=*/h0);
      attention_forward(out_s.data(), probs_s.data(), qkv_s.data(), AttentionDims{B, T, CL, nh}, slice, scratch.data());
      attention_backward(d_qkv_s.data(), d_out_s.data(), qkv_s.data(), probs_s.data(), AttentionDims{B, T, CL, nh},
                         slice, scratch.data());
      const double e_out = rel_diff(out_s, columns(out, rows, C, size_t(HD) * h0, CL));
      const double e_grad = rel_diff(d_qkv_s, columns(d_qkv, rows, 3 * size_t(C), 3 * size_t(HD) * h0, 3 * size_t(CL)));
      INFO("output " << e_out << ", d_qkv " << e_grad);
      CHECK(e_out <= 1e-12);
      CHECK(e_grad <= 1e-12);
      if (r > 0) {  // the control: the same slice drawing head 0's masks is visibly wrong
        const Dropout wrong = Dropout::make(p, seed, "dropout:attn", step, layer, first_sample, T, C, NH, 0);
        std::vector<double> out_w(out_s.size());
        attention_forward(out_w.data(), probs_s.data(), qkv_s.data(), AttentionDims{B, T, CL, nh}, wrong,
                          scratch.data());
        CHECK(rel_diff(out_w, out_s) > 1e-2);
      }
    }
  }
}
