// Context parallelism on real ranks (parallel/context_parallel.h, claim C24), at every world size divisible by
// c ∈ {1, 2, 3, 4} (the other ranks form further cp groups of their own; c's cases are skipped where c does not
// divide the world):
//  - ring attention alone against the single-process flash attention in f64, causal, both splits, with and
//    without dropout, at a short sequence (chunks shorter than a query block) and, at c = 2, a long one (chunks
//    over several 256-key tiles): the five tensors — output, log-sum-exp, dQ, dK, dV — on every rank's tokens,
//    each |Δ| ≤ 1e-12 · max|tensor|;
//  - stale K/V: two micro-batches' forwards, then their backwards in the other order (as a pipeline schedule
//    does) — each backward must use its own micro-batch's K/V, not what the last forward left in the ring;
//  - the whole model (ModelChunk with the cp hooks): the loss summed over cp and every gradient summed over cp
//    against one process, f64 with dropout on — what fails when a label at a chunk boundary, a position
//    embedding's offset, a dropout counter or the loss normalisation is taken locally instead of globally.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "../common/worst.h"
#include "comm/process_grid.h"
#include "core/rng.h"
#include "helpers.h"
#include "model/flash_attention.h"
#include "model/model_chunk.h"
#include "model/param_layout.h"
#include "parallel/context_parallel.h"

using namespace shardlab;
using namespace shardlab::test;

namespace {

constexpr double kRtol = 1e-12;
constexpr uint64_t kSeed = 7;

// The worst |got − want| / max|want| of one tensor, and where it first went past the tolerance.
struct TensorDiff {
  double worst = 0;
  std::string first_bad;
};

// Whole (B, T, 3C) qkv and (B, T, C) dO from the RNG by global index: every rank knows them all.
std::vector<double> random_tensor(const char* what, size_t n, double scale) {
  const RngStream rng = rng_stream(kSeed, what);
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * rng.normal(i);
  return v;
}

struct AttentionCase {
  int c, B, NH, HD, T;
  ContextSplit split;
  double dropout;
  std::string str() const {
    std::ostringstream o;
    o << "c = " << c << ", " << word_of(kContextSplitWords, split) << ", T = " << T << ", B = " << B
      << ", heads = " << NH << ", dropout " << dropout;
    return o.str();
  }
};

// The single process's five tensors and this rank's, in the same (global) order of this rank's rows.
struct Five {
  std::vector<double> out, lse, dq, dk, dv;
};

Five reference(const AttentionCase& k, const std::vector<double>& qkv, const std::vector<double>& dO) {
  const int C = k.NH * k.HD;
  const Dropout drop = Dropout::make(k.dropout, kSeed, "dropout:attn", 3, 1, 0, k.T, C, k.NH);
  std::vector<double> out(size_t(k.B) * k.T * C), lse(size_t(k.B) * k.NH * k.T), d_qkv(qkv.size());
  std::vector<double> scratch(flash_scratch_elements());
  const AttentionDims ad{k.B, k.T, C, k.NH};
  flash_attention_forward(out.data(), lse.data(), qkv.data(), ad, drop, scratch.data());
  flash_attention_backward(d_qkv.data(), dO.data(), out.data(), qkv.data(), lse.data(), ad, drop, scratch.data());
  Five f{out, lse, {}, {}, {}};
  for (size_t row = 0; row < size_t(k.B) * k.T; ++row)
    for (int h = 0; h < k.NH; ++h) {
      const double* g = d_qkv.data() + (row * k.NH + h) * 3 * k.HD;
      f.dq.insert(f.dq.end(), g, g + k.HD);
      f.dk.insert(f.dk.end(), g + k.HD, g + 2 * k.HD);
      f.dv.insert(f.dv.end(), g + 2 * k.HD, g + 3 * k.HD);
    }
  return f;
}

BlockDims cp_dims(const AttentionCase& k, const TokenPositions& pos) {
  BlockDims d;
  d.B = k.B, d.T = k.T, d.C = k.NH * k.HD, d.NH = k.NH, d.HD = k.HD, d.F = 4 * d.C;
  d.T_ctx = pos.count(), d.T_local = pos.count(), d.heads_total = k.NH, d.pos = pos;
  return d;
}

// This rank's rows of a whole (B, T, width) tensor, in its local order.
std::vector<double> rows_of(const std::vector<double>& whole, const TokenPositions& pos, int B, int T, int width) {
  std::vector<double> mine;
  for (int b = 0; b < B; ++b)
    for (int i = 0; i < pos.count(); ++i) {
      const double* r = whole.data() + (size_t(b) * T + pos.at(i)) * width;
      mine.insert(mine.end(), r, r + width);
    }
  return mine;
}

// Compares this rank's (B, Tc, NH·w) or (B, NH, Tc) tensor with the whole one's rows at its positions.
TensorDiff compare_rows(const char* name, const std::vector<double>& got, const std::vector<double>& whole,
                        const TokenPositions& pos, const AttentionCase& k, int width, bool head_major) {
  double scale = 0;
  for (double v : whole) scale = worst_of(scale, std::fabs(v));
  TensorDiff d;
  const int Tc = pos.count();
  for (int b = 0; b < k.B; ++b)
    for (int i = 0; i < Tc; ++i)
      for (int h = 0; h < k.NH; ++h)
        for (int j = 0; j < width; ++j) {
          const size_t mine =
              head_major ? (size_t(b) * k.NH + h) * Tc + i : ((size_t(b) * Tc + i) * k.NH + h) * width + j;
          const size_t ref = head_major ? (size_t(b) * k.NH + h) * k.T + pos.at(i)
                                        : ((size_t(b) * k.T + pos.at(i)) * k.NH + h) * width + j;
          const double rel = std::fabs(got[mine] - whole[ref]) / scale;
          if (!(rel <= kRtol) && d.first_bad.empty()) {
            std::ostringstream o;
            o << name << " sample " << b << " head " << h << " position " << pos.at(i) << " column " << j
              << ": expected " << whole[ref] << ", got " << got[mine];
            d.first_bad = o.str();
          }
          d.worst = worst_of(d.worst, rel);
        }
  return d;
}

// Every (query, key) pair's split of this rank's d_qkv into q, k, v columns, in (B, Tc, NH, HD) order.
void split_qkv(const std::vector<double>& d_qkv, int NH, int HD, Five& f) {
  for (size_t row = 0; row < d_qkv.size() / (3 * size_t(NH) * HD); ++row)
    for (int h = 0; h < NH; ++h) {
      const double* g = d_qkv.data() + (row * NH + h) * 3 * HD;
      f.dq.insert(f.dq.end(), g, g + HD);
      f.dk.insert(f.dk.end(), g + HD, g + 2 * HD);
      f.dv.insert(f.dv.end(), g + 2 * HD, g + 3 * HD);
    }
}

void check_five(const AttentionCase& k, const Five& got, const Five& want, const TokenPositions& pos, int rank) {
  INFO(k.str() << ", cp rank " << rank);
  const struct {
    const char* name;
    const std::vector<double>& g;
    const std::vector<double>& w;
    int width;
    bool head_major;
  } tensors[] = {{"output", got.out, want.out, k.HD, false},
                 {"log-sum-exp", got.lse, want.lse, 1, true},
                 {"dQ", got.dq, want.dq, k.HD, false},
                 {"dK", got.dk, want.dk, k.HD, false},
                 {"dV", got.dv, want.dv, k.HD, false}};
  for (const auto& t : tensors) {
    const TensorDiff d = compare_rows(t.name, t.g, t.w, pos, k, t.width, t.head_major);
    INFO(t.name << ": worst relative difference " << d.worst << (d.first_bad.empty() ? "" : "; first past 1e-12: ")
                << d.first_bad);
    CHECK(d.worst <= kRtol);
  }
}

}  // namespace

TEST_CASE("context parallel: ring attention's output, lse, dQ, dK, dV equal one process's flash (f64, causal)",
          "[context_parallel]") {
  const int W = world_size();
  for (int c : {1, 2, 3, 4}) {
    if (W % c != 0) continue;
    ProcessGrid grid(GridSizes{0, 1, 1, c, 1}, 0, nullptr, nullptr, CommImpl::ring);
    Communicator& cp = grid.comm(Axis::cp);
    for (ContextSplit split : {ContextSplit::zigzag, ContextSplit::contiguous})
      for (int chunk : {20, 300})  // < one query block; > one key tile (at c = 2: the tiles are the same at any c)
        for (double p : {0.0, 0.1}) {
          if (chunk > 256 && c != 2) continue;
          const AttentionCase k{c, 2, 2, 8, 2 * c * chunk, split, p};
          const int C = k.NH * k.HD;
          const std::vector<double> qkv = random_tensor("test:cp qkv", size_t(k.B) * k.T * 3 * C, 1.0);
          const std::vector<double> dO = random_tensor("test:cp dO", size_t(k.B) * k.T * C, 1.0);
          const Five want = reference(k, qkv, dO);
          ModelSlice slice;
          slice.cp = c, slice.cp_rank = cp.rank(), slice.cp_split = split;
          const TokenPositions pos = slice.positions(k.T);
          MemoryLedger ledger;
          ContextParallelAttention<double> ring(cp, nullptr, slice, k.T, k.B, k.NH, k.HD, ledger);
          const BlockDims d = cp_dims(k, pos);
          const Dropout drop = Dropout::make(p, kSeed, "dropout:attn", 3, 1, 0, k.T, C, k.NH, 0, 0, pos);
          const std::vector<double> my_qkv = rows_of(qkv, pos, k.B, k.T, 3 * C), my_dO = rows_of(dO, pos, k.B, k.T, C);
          Five got;
          got.out.resize(size_t(k.B) * pos.count() * C);
          got.lse.resize(size_t(k.B) * k.NH * pos.count());
          std::vector<double> d_qkv(my_qkv.size());
          REQUIRE(ring.attention_forward(got.out.data(), got.lse.data(), my_qkv.data(), d, drop, nullptr));
          REQUIRE(ring.attention_backward(d_qkv.data(), my_dO.data(), got.out.data(), my_qkv.data(), got.lse.data(), d,
                                          drop, nullptr));
          split_qkv(d_qkv, k.NH, k.HD, got);
          check_five(k, got, want, pos, cp.rank());
        }
  }
}

TEST_CASE("context parallel: each backward uses its own micro-batch's K/V, not the last forward's",
          "[context_parallel]") {
  const int W = world_size(), c = W % 2 == 0 ? 2 : 1;
  ProcessGrid grid(GridSizes{0, 1, 1, c, 1}, 0, nullptr, nullptr, CommImpl::ring);
  Communicator& cp = grid.comm(Axis::cp);
  const AttentionCase k{c, 1, 2, 8, 2 * c * 40, ContextSplit::zigzag, 0.0};
  const int C = k.NH * k.HD;
  ModelSlice slice;
  slice.cp = c, slice.cp_rank = cp.rank();
  const TokenPositions pos = slice.positions(k.T);
  MemoryLedger ledger;
  ContextParallelAttention<double> ring(cp, nullptr, slice, k.T, k.B, k.NH, k.HD, ledger);
  const BlockDims d = cp_dims(k, pos);
  const Dropout drop = Dropout::make(0.0, kSeed, "dropout:attn", 3, 1, 0, k.T, C, k.NH, 0, 0, pos);
  struct Micro {
    std::vector<double> qkv, dO, my_qkv, my_dO, d_qkv;
    Five want, got;
  } mb[2];
  for (int i = 0; i < 2; ++i) {  // two different micro-batches: different K/V
    Micro& m = mb[i];
    m.qkv = random_tensor(i ? "test:cp stale qkv 1" : "test:cp stale qkv 0", size_t(k.B) * k.T * 3 * C, 1.0);
    m.dO = random_tensor(i ? "test:cp stale dO 1" : "test:cp stale dO 0", size_t(k.B) * k.T * C, 1.0);
    m.want = reference(k, m.qkv, m.dO);
    m.my_qkv = rows_of(m.qkv, pos, k.B, k.T, 3 * C);
    m.my_dO = rows_of(m.dO, pos, k.B, k.T, C);
    m.got.out.resize(size_t(k.B) * pos.count() * C);
    m.got.lse.resize(size_t(k.B) * k.NH * pos.count());
    m.d_qkv.resize(m.my_qkv.size());
    ring.attention_forward(m.got.out.data(), m.got.lse.data(), m.my_qkv.data(), d, drop, nullptr);
  }
  for (int i : {0, 1}) {  // the first micro-batch's backward after the second's forward
    Micro& m = mb[i];
    ring.attention_backward(m.d_qkv.data(), m.my_dO.data(), m.got.out.data(), m.my_qkv.data(), m.got.lse.data(), d,
                            drop, nullptr);
    split_qkv(m.d_qkv, k.NH, k.HD, m.got);
    INFO("micro-batch " << i << " (forwards 0, 1; backwards 0, 1)");
    check_five(k, m.got, m.want, pos, cp.rank());
  }
}

TEST_CASE("context parallel: the whole model's loss and gradients summed over cp equal one process (f64, dropout)",
          "[context_parallel]") {
  const int W = world_size();
  GPTConfig cfg;
  cfg.layers = 2, cfg.hidden = 16, cfg.heads = 2, cfg.seq = 48, cfg.vocab = 32, cfg.dropout = 0.1;
  const ParamLayout layout(cfg);
  std::vector<double> params(layout.total());
  init_params(layout, cfg, kSeed, params.data(), 0, params.size());
  const int B = 2;
  // Tokens whose next token differs at every position, so a label taken from the wrong position changes the loss.
  std::vector<int32_t> inputs(size_t(B) * cfg.seq), targets(inputs.size());
  const RngStream rng = rng_stream(kSeed, "test:cp tokens");
  for (size_t i = 0; i < inputs.size(); ++i) inputs[i] = int32_t(rng.uniform(i) * cfg.vocab);
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < cfg.seq; ++t)
      targets[size_t(b) * cfg.seq + t] = t + 1 < cfg.seq ? inputs[size_t(b) * cfg.seq + t + 1] : 3;
  const ActivationPolicy policy{false, Recompute::none, AttentionKernel::flash};
  const MicroBatch mb{0, B, inputs.data(), targets.data(), {kSeed, 5, 4}, true};
  const double scale = 1.0 / (double(B) * cfg.seq);  // the one normalisation: every token of the batch

  MemoryLedger ref_ledger;
  std::vector<double> ref_grads(layout.total());
  ModelChunk<double> whole(cfg, layout, ChunkSpec::whole(cfg), B, policy, ref_ledger);
  FlatAccess<double> ref_access(layout, params.data(), ref_grads.data());
  const double ref_loss = whole.forward(mb, ref_access);
  whole.backward(0, ref_access, scale);

  for (int c : {2, 3, 4}) {
    if (W % c != 0) continue;
    ProcessGrid grid(GridSizes{0, 1, 1, c, 1}, 0, nullptr, nullptr, CommImpl::ring);
    Communicator& cp = grid.comm(Axis::cp);
    for (ContextSplit split : {ContextSplit::zigzag, ContextSplit::contiguous}) {
      ModelSlice slice;
      slice.cp = c, slice.cp_rank = cp.rank(), slice.cp_split = split;
      REQUIRE(slice.validate(cfg).empty());
      MemoryLedger ledger;
      ContextParallelAttention<double> ring(cp, nullptr, slice, cfg.seq, B, cfg.heads, cfg.head_dim(), ledger);
      ModelChunk<double> chunk(cfg, layout, ChunkSpec::whole(cfg), B, policy, ledger, &ring, slice);
      std::vector<double> grads(layout.total());
      FlatAccess<double> access(layout, params.data(), grads.data());
      const double my_loss = chunk.forward(mb, access);
      chunk.backward(0, access, scale);
      double loss = 0;
      for (double v : cp.all_gather_value(my_loss)) loss += v;  // each rank's tokens' part
      cp.all_reduce(grads.data(), grads.size());
      INFO("c = " << c << ", " << word_of(kContextSplitWords, split) << ", cp rank " << cp.rank());
      INFO("loss " << loss << " vs one process " << ref_loss);
      CHECK(std::fabs(loss - ref_loss) <= kRtol * std::fabs(ref_loss));
      for (const TensorSpec& t : layout.tensors()) {
        double worst = 0, top = 0;
        for (size_t i = t.offset; i < t.offset + t.numel; ++i) top = worst_of(top, std::fabs(ref_grads[i]));
        for (size_t i = t.offset; i < t.offset + t.numel; ++i)
          worst = worst_of(worst, std::fabs(grads[i] - ref_grads[i]) / top);
        INFO("gradient of " << t.name << ": worst relative difference " << worst);
        CHECK(worst <= kRtol);
      }
    }
  }
}
