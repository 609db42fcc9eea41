// Core contracts: counter-based RNG (layout-independent init, stream statistics, stream identity),
// dropout masks that do not depend on the micro-batch split, exact memory-ledger bookkeeping, the
// parameter layout (count formula, contiguous named views) and bf16 round-to-nearest-even (claim C2).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/bf16.h"
#include "core/ledger.h"
#include "core/rng.h"
#include "model/config.h"
#include "model/dropout.h"
#include "model/param_layout.h"

using namespace shardlab;

namespace {

GPTConfig tiny_config() {
  GPTConfig cfg;
  cfg.layers = 2;
  cfg.hidden = 6;
  cfg.heads = 2;
  cfg.seq = 4;
  cfg.vocab = 7;
  return cfg;
}

// Hand-computed parameter count: embeddings, L blocks, final LN, untied LM head.
//   per block: ln1 2C + qkv (3C² + 3C) + proj (C² + C) + ln2 2C + fc (4C² + 4C) + fcproj (4C² + C)
//            = 12C² + 13C
size_t expected_params(const GPTConfig& c) {
  const size_t V = c.vocab, T = c.seq, C = c.hidden, L = c.layers;
  return V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C + V * C;
}

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace

// ================================== RNG ==========================================================
TEST_CASE("init_params of a slice equals the same slice of the whole init (bit-identical)", "[core]") {
  const GPTConfig cfg = tiny_config();
  const ParamLayout layout(cfg);
  const size_t total = layout.total();
  REQUIRE(total == expected_params(cfg));
  std::vector<double> whole(total, -1.0);
  init_params(layout, cfg, 1234, whole.data(), 0, total);

  std::vector<std::pair<size_t, size_t>> slices = {{0, total}, {0, 1},     {total - 1, total},
                                                   {5, 50},    {100, 777}, {total / 3, 2 * total / 3}};
  const TensorSpec& qkv = layout.find("blocks.1.attn.qkv.weight");
  slices.push_back({qkv.offset + 7, qkv.offset + qkv.numel - 5});  // strictly inside one tensor
  for (const TensorSpec& t : layout.tensors()) {                   // every boundary, cut on both sides
    if (t.offset >= 3) slices.push_back({t.offset - 3, std::min(total, t.offset + 4)});
  }
  // A ZeRO-like partition into 4 uneven shards that together make the whole buffer.
  const size_t cuts[] = {0, total / 4 + 1, total / 2 - 3, 3 * total / 4 + 2, total};
  for (int s = 0; s < 4; ++s) slices.push_back({cuts[s], cuts[s + 1]});

  for (const auto& [lo, hi] : slices) {
    std::vector<double> part(hi - lo, -1.0);
    init_params(layout, cfg, 1234, part.data(), lo, hi);
    INFO("slice [" << lo << ", " << hi << ")");
    CHECK(std::memcmp(part.data(), whole.data() + lo, (hi - lo) * sizeof(double)) == 0);
  }

  // f32 too: a float slice equals the float whole.
  std::vector<float> wf(total), pf(300);
  init_params(layout, cfg, 1234, wf.data(), 0, total);
  init_params(layout, cfg, 1234, pf.data(), 111, 411);
  CHECK(std::memcmp(pf.data(), wf.data() + 111, 300 * sizeof(float)) == 0);
}

TEST_CASE("init_params follows the documented per-tensor formula", "[core]") {
  GPTConfig cfg;
  cfg.layers = 3;
  cfg.hidden = 32;
  cfg.heads = 4;
  cfg.seq = 16;
  cfg.vocab = 64;
  const ParamLayout layout(cfg);
  std::vector<double> p(layout.total());
  init_params(layout, cfg, 99, p.data(), 0, p.size());
  const double std_res = 0.02 / std::sqrt(2.0 * cfg.layers);
  for (const TensorSpec& t : layout.tensors()) {
    INFO(t.name);
    const RngStream rng = rng_stream(99, "init:" + t.name);
    double ss = 0;
    bool formula_ok = true;
    for (size_t i = 0; i < t.numel; ++i) {
      double want = 0;
      switch (t.init) {
        case Init::normal: want = 0.02 * rng.normal(i); break;
        case Init::normal_residual: want = std_res * rng.normal(i); break;
        case Init::zeros: want = 0.0; break;
        case Init::ones: want = 1.0; break;
      }
      formula_ok = formula_ok && p[t.offset + i] == want;
      ss += p[t.offset + i] * p[t.offset + i];
    }
    CHECK(formula_ok);
    const double rms = std::sqrt(ss / t.numel);
    if (t.init == Init::normal) CHECK(rms == Approx(0.02).epsilon(0.15));
    if (t.init == Init::normal_residual) CHECK(rms == Approx(std_res).epsilon(0.15));
  }
  // Which tensors get which init.
  CHECK(layout.find("blocks.0.attn.proj.weight").init == Init::normal_residual);
  CHECK(layout.find("blocks.2.mlp.proj.weight").init == Init::normal_residual);
  CHECK(layout.find("blocks.1.attn.qkv.weight").init == Init::normal);
  CHECK(layout.find("blocks.1.ln2.weight").init == Init::ones);
  CHECK(layout.find("blocks.1.mlp.fc.bias").init == Init::zeros);
  // Different seeds give different weights, the same seed the same.
  std::vector<double> q(p.size()), p2(p.size());
  init_params(layout, cfg, 100, q.data(), 0, q.size());
  init_params(layout, cfg, 99, p2.data(), 0, p2.size());
  CHECK(q[layout.tok_emb] != p[layout.tok_emb]);
  CHECK(p2 == p);
}

TEST_CASE("rng_stream: uniform in [0,1), normal moments, below in range", "[core]") {
  // One stream per draw kind: normal(i) reads counters 2i and 2i+1, uniform(i) and below(i) read i.
  const RngStream su = rng_stream(7, "stats:uniform"), sn = rng_stream(7, "stats:normal"),
                  sb = rng_stream(7, "stats:below");
  const int n = 100000;
  double umin = 1, umax = 0, usum = 0, usq = 0, nsum = 0, nsq = 0;
  int tails = 0;
  std::vector<int> hist(10, 0);
  bool below_in_range = true;
  for (int i = 0; i < n; ++i) {
    const double u = su.uniform(i);
    umin = std::min(umin, u);
    umax = std::max(umax, u);
    usum += u;
    usq += u * u;
    const double z = sn.normal(i);
    nsum += z;
    nsq += z * z;
    tails += std::fabs(z) > 2.0;
    const uint64_t k = sb.below(i, 10);
    below_in_range = below_in_range && k < 10;
    if (k < 10) ++hist[k];
  }
  CHECK(below_in_range);
  CHECK(umin >= 0.0);
  CHECK(umax < 1.0);
  CHECK(umin < 1e-3);
  CHECK(umax > 1 - 1e-3);
  const double umean = usum / n, uvar = usq / n - umean * umean;
  CHECK(umean == Approx(0.5).margin(0.005));      // σ ≈ 0.0009
  CHECK(uvar == Approx(1.0 / 12).margin(0.003));  // σ ≈ 0.0003
  const double nmean = nsum / n, nvar = nsq / n - nmean * nmean;
  CHECK(nmean == Approx(0.0).margin(0.02));                                   // σ ≈ 0.003
  CHECK(nvar == Approx(1.0).margin(0.03));                                    // σ ≈ 0.0045
  CHECK(double(tails) / n == Approx(0.0455).margin(0.005));                   // Gaussian tails, not just moments
  for (int k = 0; k < 10; ++k) CHECK(hist[k] == Approx(n / 10).margin(600));  // σ ≈ 95
}

TEST_CASE("rng_stream: identity and independence of streams", "[core]") {
  auto same = [](const RngStream& a, const RngStream& b) {
    for (uint64_t i = 0; i < 64; ++i)
      if (a.bits(i) != b.bits(i)) return false;
    return true;
  };
  auto disjoint = [](const RngStream& a, const RngStream& b) {  // no equal number at the same index
    for (uint64_t i = 0; i < 64; ++i)
      if (a.bits(i) == b.bits(i)) return false;
    return true;
  };
  const RngStream base = rng_stream(1, "x", 2, 3, 4);
  CHECK(same(base, rng_stream(1, "x", 2, 3, 4)));
  CHECK(base.uniform(17) == rng_stream(1, "x", 2, 3, 4).uniform(17));
  CHECK(base.normal(17) == rng_stream(1, "x", 2, 3, 4).normal(17));
  CHECK(disjoint(base, rng_stream(2, "x", 2, 3, 4)));  // seed
  CHECK(disjoint(base, rng_stream(1, "y", 2, 3, 4)));  // name
  CHECK(disjoint(base, rng_stream(1, "x", 9, 3, 4)));  // a
  CHECK(disjoint(base, rng_stream(1, "x", 2, 9, 4)));  // b
  CHECK(disjoint(base, rng_stream(1, "x", 2, 3, 9)));  // c
  // The arguments are positional: permuting them is a different stream.
  const RngStream a = rng_stream(1, "x", 1, 0, 0), b = rng_stream(1, "x", 0, 1, 0), c = rng_stream(1, "x", 0, 0, 1);
  CHECK(disjoint(a, b));
  CHECK(disjoint(b, c));
  CHECK(disjoint(a, c));
  CHECK(disjoint(rng_stream(5, "dropout:attn", 3, 1), rng_stream(5, "dropout:proj", 3, 1)));
  CHECK(disjoint(rng_stream(5, "init:ab"), rng_stream(5, "init:ba")));
  // Neighbouring counters within a stream are unrelated.
  int equal_top_byte = 0;
  for (uint64_t i = 0; i < 1000; ++i) equal_top_byte += (base.bits(i) >> 56) == (base.bits(i + 1) >> 56);
  CHECK(equal_top_byte < 20);  // expected ≈ 4
}

// ================================== Dropout ======================================================
TEST_CASE("dropout masks do not depend on the micro-batch split", "[core]") {
  const int Bg = 4, T = 5, C = 8, NH = 2;
  const double p = 0.3;
  const Dropout whole = Dropout::make(p, 42, "dropout:attn", 7, 1, 0, T, C, NH);
  const Dropout micro = Dropout::make(p, 42, "dropout:attn", 7, 1, 2, T, C, NH);  // samples 2, 3
  const float keep = float(1.0 / (1.0 - p));

  SECTION("attention_index path") {
    const size_t TT = static_cast<size_t>(T) * T;
    std::vector<float> ones(TT, 1.0f);
    std::vector<float> mw(static_cast<size_t>(Bg) * NH * TT), mm(static_cast<size_t>(2) * NH * TT);
    for (int b = 0; b < Bg; ++b)
      for (int h = 0; h < NH; ++h)
        whole.apply(mw.data() + (b * NH + h) * TT, ones.data(), TT, whole.attention_index(b, h, 0));
    for (int b = 0; b < 2; ++b)
      for (int h = 0; h < NH; ++h)
        micro.apply(mm.data() + (b * NH + h) * TT, ones.data(), TT, micro.attention_index(b, h, 0));
    CHECK(std::memcmp(mm.data(), mw.data() + 2 * NH * TT, mm.size() * sizeof(float)) == 0);
    // Not trivially equal: different samples and heads see different masks; values are 0 or 1/(1-p).
    CHECK(std::memcmp(mw.data(), mw.data() + 2 * NH * TT, 2 * NH * TT * sizeof(float)) != 0);
    CHECK(std::memcmp(mw.data(), mw.data() + TT, TT * sizeof(float)) != 0);
    bool values_ok = true;
    for (float v : mw) values_ok = values_ok && (v == 0.0f || v == keep);
    CHECK(values_ok);
  }

  SECTION("activation_index path") {
    const size_t n = static_cast<size_t>(T) * C;
    std::vector<double> aw(Bg * n, 1.0), am(2 * n, 1.0);
    whole.apply_activation(aw.data(), Bg);
    micro.apply_activation(am.data(), 2);
    CHECK(std::memcmp(am.data(), aw.data() + 2 * n, am.size() * sizeof(double)) == 0);
    CHECK(std::memcmp(aw.data(), aw.data() + 2 * n, 2 * n * sizeof(double)) != 0);
    // Single-sample micro-batches k = 0..3 reproduce the whole batch sample by sample.
    for (int k = 0; k < Bg; ++k) {
      const Dropout one = Dropout::make(p, 42, "dropout:attn", 7, 1, k, T, C, NH);
      std::vector<double> a1(n, 1.0);
      one.apply_activation(a1.data(), 1);
      INFO("sample " << k);
      CHECK(std::memcmp(a1.data(), aw.data() + k * n, n * sizeof(double)) == 0);
    }
  }

  SECTION("step, layer and site change the mask") {
    const size_t n = static_cast<size_t>(T) * C;
    auto mask = [&](const Dropout& d) {
      std::vector<double> a(n, 1.0);
      d.apply_activation(a.data(), 1);
      return a;
    };
    const std::vector<double> ref = mask(whole);
    CHECK(mask(Dropout::make(p, 42, "dropout:attn", 8, 1, 0, T, C, NH)) != ref);
    CHECK(mask(Dropout::make(p, 42, "dropout:attn", 7, 2, 0, T, C, NH)) != ref);
    CHECK(mask(Dropout::make(p, 42, "dropout:mlp", 7, 1, 0, T, C, NH)) != ref);
    CHECK(mask(Dropout::make(p, 43, "dropout:attn", 7, 1, 0, T, C, NH)) != ref);
    CHECK(mask(Dropout::make(p, 42, "dropout:attn", 7, 1, 0, T, C, NH)) == ref);
  }

  SECTION("fraction dropped is p, kept values scaled by 1/(1-p)") {
    const int B = 64, Tb = 16, Cb = 32;  // 32768 elements: σ of the fraction ≈ 0.0025
    for (double pp : {0.1, 0.2, 0.5}) {
      const Dropout d = Dropout::make(pp, 3, "dropout:mlp", 1, 0, 0, Tb, Cb, NH);
      std::vector<double> a(static_cast<size_t>(B) * Tb * Cb, 1.0);
      d.apply_activation(a.data(), B);
      size_t zeros = 0;
      bool scaled = true;
      for (double v : a) {
        if (v == 0.0)
          ++zeros;
        else
          scaled = scaled && v == 1.0 / (1.0 - pp);
      }
      INFO("p = " << pp);
      CHECK(double(zeros) / a.size() == Approx(pp).margin(0.015));
      CHECK(scaled);
    }
    const Dropout off = Dropout::make(0.0, 3, "dropout:mlp", 1, 0, 0, Tb, Cb, NH);
    CHECK_FALSE(off.active());
  }
}

// ================================== Ledger =======================================================
TEST_CASE("memory ledger books exact bytes per category", "[core]") {
  MemoryLedger L;
  for (int c = 0; c < kMemCategories; ++c) {
    CHECK(L.current(static_cast<Mem>(c)) == 0);
    CHECK(L.peak(static_cast<Mem>(c)) == 0);
  }
  {
    Buffer<float> g(L, Mem::grad, 1001);
    CHECK(L.current(Mem::grad) == 1001 * sizeof(float));
    CHECK(L.peak(Mem::grad) == 4004);
    CHECK(L.total_current() == 4004);
    CHECK(g.size() == 1001);
    CHECK(g.bytes() == 4004);
    CHECK(reinterpret_cast<uintptr_t>(g.data()) % 64 == 0);
    bool zero = true;
    for (size_t i = 0; i < g.size(); ++i) zero = zero && g[i] == 0.0f;
    CHECK(zero);
    {
      Buffer<double> m(L, Mem::adam_m, 7);
      Buffer<double> a(L, Mem::activation, 13);
      CHECK(L.current(Mem::adam_m) == 7 * sizeof(double));
      CHECK(L.current(Mem::activation) == 104);
      CHECK(L.current(Mem::grad) == 4004);  // other categories untouched
      CHECK(L.current(Mem::param) == 0);
      CHECK(L.total_current() == 4004 + 56 + 104);
      CHECK(L.model_state_bytes() == 4004 + 56);  // activations are not model states
    }
    CHECK(L.current(Mem::adam_m) == 0);  // destruction releases
    CHECK(L.current(Mem::activation) == 0);
    CHECK(L.peak(Mem::adam_m) == 56);  // peaks persist
    CHECK(L.peak(Mem::activation) == 104);
    CHECK(L.total_peak() == 4004 + 56 + 104);

    // Moves transfer ownership without double counting.
    Buffer<float> moved(std::move(g));
    CHECK(L.current(Mem::grad) == 4004);
    CHECK(moved.size() == 1001);
    CHECK(g.size() == 0);
    CHECK(g.data() == nullptr);
    Buffer<float> target(L, Mem::workspace, 10);
    CHECK(L.current(Mem::workspace) == 40);
    target = std::move(moved);  // the target's old workspace bytes are released, grad bytes move in
    CHECK(L.current(Mem::workspace) == 0);
    CHECK(L.current(Mem::grad) == 4004);
    CHECK(L.total_current() == 4004);
    Buffer<float> defaulted;
    defaulted = std::move(target);
    CHECK(L.current(Mem::grad) == 4004);
    defaulted.reset();
    CHECK(L.current(Mem::grad) == 0);
    defaulted.reset();  // idempotent
    CHECK(L.current(Mem::grad) == 0);
  }
  CHECK(L.total_current() == 0);
  CHECK(L.peak(Mem::grad) == 4004);

  Buffer<double> keep(L, Mem::master, 3);
  Buffer<uint16_t> half(L, Mem::param, 5);  // bf16 storage: 2 bytes each
  CHECK(L.current(Mem::param) == 10);
  L.reset_peaks();
  CHECK(L.peak(Mem::grad) == 0);
  CHECK(L.peak(Mem::master) == 24);
  CHECK(L.total_peak() == 34);

  L.release(Mem::momentum, 1);  // more than is booked: counted, clamped, never thrown
  CHECK(L.mismatched_releases() == 1);
  CHECK(L.current(Mem::momentum) == 0);
  {
    // A buffer whose bytes were released behind its back: its destructor must not throw (that would
    // end the program in std::terminate) and the ledger must notice.
    Buffer<float> orphan(L, Mem::workspace, 8);
    L.release(Mem::workspace, L.current(Mem::workspace));
  }
  CHECK(L.mismatched_releases() == 2);
  CHECK(L.current(Mem::workspace) == 0);
  static_assert(noexcept(std::declval<Buffer<float>&>().reset()), "Buffer::reset must not throw");
  static_assert(std::is_nothrow_destructible<Buffer<float>>::value, "Buffer's destructor must not throw");

  const nlohmann::json j = L.to_json();
  for (const char* name :
       {"param", "grad", "master", "adam_m", "adam_v", "momentum", "activation", "comm_buffer", "workspace"}) {
    INFO(name);
    REQUIRE(j.contains(name));
    CHECK(j[name].contains("current"));
    CHECK(j[name].contains("peak"));
  }
  CHECK(j["master"]["current"].get<size_t>() == 24);
  CHECK(j["param"]["peak"].get<size_t>() == 10);
  CHECK(j["grad"]["peak"].get<size_t>() == 0);
  for (int c = 0; c < kMemCategories; ++c) CHECK(std::string(mem_name(static_cast<Mem>(c))) != "?");
}

// ================================== ParamLayout ==================================================
TEST_CASE("parameter layout: count, contiguous offsets, unique names", "[core]") {
  for (int L : {1, 2, 3})
    for (int C : {4, 6, 10}) {
      GPTConfig cfg = tiny_config();
      cfg.layers = L;
      cfg.hidden = C;
      cfg.heads = 2;
      const ParamLayout layout(cfg);
      INFO("L " << L << " C " << C);
      CHECK(layout.total() == expected_params(cfg));
      CHECK(layout.matmul_params() == size_t(L) * 12 * C * C + size_t(C) * cfg.vocab);
      CHECK(layout.tensors().size() == size_t(2 + 12 * L + 3));

      size_t expect_offset = 0;
      std::set<std::string> names;
      for (const TensorSpec& t : layout.tensors()) {
        INFO(t.name);
        size_t prod = 1;
        for (int64_t d : t.shape) prod *= size_t(d);
        CHECK(t.numel == prod);
        CHECK(t.offset == expect_offset);
        expect_offset += t.numel;
        CHECK(names.insert(t.name).second);
        CHECK(&layout.find(t.name) == &t);
      }
      CHECK(expect_offset == layout.total());

      // Named offsets agree with the named views.
      CHECK(layout.tensors().front().name == "tok_emb");
      CHECK(layout.tensors().back().name == "lm_head.weight");
      CHECK(layout.find("tok_emb").offset == layout.tok_emb);
      CHECK(layout.find("pos_emb").offset == layout.pos_emb);
      CHECK(layout.find("ln_f.weight").offset == layout.lnf_w);
      CHECK(layout.find("ln_f.bias").offset == layout.lnf_b);
      CHECK(layout.find("lm_head.weight").offset == layout.lm_head);
      REQUIRE(layout.blocks.size() == size_t(L));
      for (int l = 0; l < L; ++l) {
        const std::string p = "blocks." + std::to_string(l) + ".";
        const BlockOffsets& b = layout.blocks[l];
        CHECK(layout.find(p + "ln1.weight").offset == b.ln1_w);
        CHECK(layout.find(p + "attn.qkv.weight").offset == b.qkv_w);
        CHECK(layout.find(p + "attn.qkv.weight").shape == std::vector<int64_t>{3 * C, C});
        CHECK(layout.find(p + "attn.proj.bias").offset == b.proj_b);
        CHECK(layout.find(p + "mlp.fc.weight").shape == std::vector<int64_t>{4 * C, C});
        CHECK(layout.find(p + "mlp.proj.weight").offset == b.fcproj_w);
        CHECK(layout.find(p + "mlp.proj.bias").offset == b.fcproj_b);
      }
      CHECK_THROWS_AS(layout.find("no.such.tensor"), std::out_of_range);
      CHECK_THROWS(layout.find(""));
    }
}

// ================================== bf16 =========================================================
TEST_CASE("bf16 rounds to nearest even and swamps small updates (C2)", "[core]") {
  // 1.0 = 0x3f800000; the bf16 ulp at 1 is 2^-7, so the low 16 bits are what gets rounded away.
  CHECK(to_bf16(bits_float(0x3f800000u)) == 0x3f80);  // exact
  CHECK(to_bf16(bits_float(0x3f808000u)) == 0x3f80);  // tie, kept half even (…80) → round down
  CHECK(to_bf16(bits_float(0x3f818000u)) == 0x3f82);  // tie, kept half odd (…81) → round up to even
  CHECK(to_bf16(bits_float(0x3f808001u)) == 0x3f81);  // just above a tie → up
  CHECK(to_bf16(bits_float(0x3f807fffu)) == 0x3f80);  // just below a tie → down
  CHECK(to_bf16(bits_float(0x3f817fffu)) == 0x3f81);  // just below a tie, odd → down
  CHECK(to_bf16(bits_float(0xbf818000u)) == 0xbf82);  // sign does not matter
  CHECK(to_bf16(bits_float(0xbf808000u)) == 0xbf80);
  CHECK(to_bf16(bits_float(0x3fff8000u)) == 0x4000);  // carry into the exponent: 1.99609375+ → 2
  CHECK(from_bf16(0x3f81) == 1.0f + 0x1.0p-7f);
  CHECK(round_bf16(0.5f) == 0.5f);
  CHECK(round_bf16(-3.0f) == -3.0f);
  CHECK(to_bf16(0.0f) == 0x0000);
  CHECK(to_bf16(-0.0f) == 0x8000);
  CHECK(float_bits(1e-40f) == 0x000116c2u);
  CHECK(to_bf16(1e-40f) == 0x0001);                   // subnormals round like any other value
  CHECK(to_bf16(bits_float(0x00018000u)) == 0x0002);  // subnormal tie to even (odd → up)

  // NaN stays NaN (any payload, including one only in the discarded bits); infinities are kept.
  const float qnan = std::numeric_limits<float>::quiet_NaN();
  CHECK(std::isnan(round_bf16(qnan)));
  CHECK(std::isnan(round_bf16(bits_float(0x7f800001u))));  // payload only in the low 16 bits
  CHECK(std::isnan(round_bf16(bits_float(0x7fffffffu))));  // would carry into the sign if rounded
  CHECK(std::isnan(round_bf16(bits_float(0xff800001u))));
  CHECK(std::signbit(round_bf16(bits_float(0xff800001u))));
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(to_bf16(inf) == 0x7f80);
  CHECK(to_bf16(-inf) == 0xff80);
  CHECK(round_bf16(inf) == inf);
  CHECK(round_bf16(-inf) == -inf);
  CHECK(to_bf16(std::numeric_limits<float>::max()) == 0x7f80);  // above the largest bf16 + half ulp → inf

  // Swamping (claim C2): w + u == w in bf16 whenever |u| < |w| / 2^8, while float keeps the update.
  const float w = 1.0f;
  CHECK(w + 1e-3f != w);
  CHECK(round_bf16(w + 1e-3f) == w);
  CHECK(round_bf16(w + 0x1.0p-8f * 0.99f) == w);
  CHECK(round_bf16(w + 0x1.0p-8f * 1.01f) == w + 0x1.0p-7f);  // just past the threshold the update lands
  CHECK(round_bf16(256.0f + 0.9f) == 256.0f);                 // the threshold scales with |w|
  CHECK(round_bf16(256.0f + 1.1f) == 258.0f);
  // The exact rule is |u| < half the bf16 spacing at w, which lies between |w|/2^9 and |w|/2^8:
  // always swamped below |w|/2^9, never above |w|/2^8, in between it depends on w and the sign of u.
  CHECK(round_bf16(1.0f - 0.003f) != 1.0f);              // |u| < |w|/2^8, but the spacing halves below 2^k
  CHECK(round_bf16(1.9921875f + 0.005f) != 1.9921875f);  // |u| < |w|/2^8, but |w| is near the top of its octave
  {
    const RngStream r = rng_stream(5, "test:swamping");
    bool below_swamped = true, above_moves = true;
    for (uint64_t i = 0; i < 20000; ++i) {
      const float wv =
          round_bf16(float(std::exp(8.0 * (r.uniform(4 * i) - 0.5))) * (r.uniform(4 * i + 1) < 0.5 ? -1 : 1));
      const float mag = float(r.uniform(4 * i + 2));  // (0, 1)
      const float sign = r.uniform(4 * i + 3) < 0.5 ? -1.0f : 1.0f;
      const float u_small = sign * mag * std::fabs(wv) * 0x1.0p-9f;                  // |u| < |w|/2^9
      const float u_big = sign * (1.0f + mag) * std::fabs(wv) * 0x1.0p-8f * 1.001f;  // |u| > |w|/2^8
      below_swamped = below_swamped && round_bf16(wv + u_small) == wv;
      above_moves = above_moves && round_bf16(wv + u_big) != wv;
    }
    CHECK(below_swamped);
    CHECK(above_moves);
  }
  // Repeated small updates never move a bf16 weight, however many steps.
  float wb = 1.0f, wf = 1.0f;
  for (int i = 0; i < 1000; ++i) {
    wb = round_bf16(wb + 1e-3f);
    wf += 1e-3f;
  }
  CHECK(wb == 1.0f);
  CHECK(wf == Approx(2.0f).epsilon(1e-3));
}
