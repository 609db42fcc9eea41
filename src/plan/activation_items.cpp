// plan/activation_items.cpp — the itemised activations (see activation_items.h).
#include "plan/activation_items.h"

#include <algorithm>

namespace shardlab::plan {

namespace {
using u64 = std::uint64_t;

ActivationItem item(const char* name, const char* what, const std::string& formula, u64 elements, u64 width,
                    bool kept) {
  return ActivationItem{name, what, formula, elements, elements * width, kept};
}
}  // namespace

// Rows of a micro-batch outside the tp regions (s·b, or s·b/t with sequence parallelism) and inside them
// (s·b), with the formulas' spelling of each; with context parallelism s/c tokens of each sample.
struct Rows {
  u64 outside, inside;
  std::string out, in;  // "s·b" or "s·b/t" as the formulas write the row count
  std::string tokens;   // "s" or "(s/c)"
};
Rows rows_of(const ActivationShape& s) {
  const u64 sb = s.positions() * s.micro_batch;
  const std::string tok = s.cp > 1 ? "(s/c)" : "s";
  if (s.sequence_parallel) return {sb / s.tp, sb, tok + "·b/t", tok + "·b", tok};
  return {sb, sb, tok + "·b", tok + "·b", tok};
}

std::vector<ActivationItem> block_items(const ActivationShape& s) {
  const Rows r = rows_of(s);
  const u64 R = r.outside, N = r.inside, h = s.hidden, t = s.tp, w = s.width, ws = s.stat_width;
  const std::string per_t = t > 1 ? "/t" : "";
  const std::string x = r.out + "·h · w", stat = r.out + " · w_s";  // outside the regions: LN, residual
  auto in = [&](const char* k) { return std::string(k) + r.in + "·h" + per_t + " · w"; };  // inside: split by t
  const bool all = s.recompute != Recompute::full;  // full recompute keeps only the input
  std::vector<ActivationItem> v;
  v.push_back(item("block.x", "block input: LN1's input and the first residual", x, R * h, w, true));
  v.push_back(item("block.ln1", "LN1 output: the QKV projection's input", x, R * h, w, all));
  v.push_back(item("block.ln1_mean", "LN1 mean per token", stat, R, ws, all));
  v.push_back(item("block.ln1_rstd", "LN1 1/std per token", stat, R, ws, all));
  v.push_back(item("block.qkv", "Q, K, V: the attention core's input", in("3·"), 3 * N * h / t, w, all));
  if (s.attention == AttentionKernel::naive && s.recompute != Recompute::selective)
    v.push_back(item("block.probs", "softmax(QKᵀ/√d): the s² term",
                     (s.cp > 1 ? "a·(s/c)·s·b" : "a·s²·b") + per_t + " · w", s.heads / t * s.seq * N, w, all));
  if (s.attention == AttentionKernel::flash)
    v.push_back(item("block.lse", "flash: log-sum-exp per row", "a·" + r.tokens + "·b" + per_t + " · w_s",
                     s.heads / t * N, ws, all));
  v.push_back(item("block.atty", "attention output: W^O's input", in(""), N * h / t, w, all));
  v.push_back(item("block.resid_mid", "after residual 1: LN2's input", x, R * h, w, all));
  v.push_back(item("block.ln2", "LN2 output: the fc input", x, R * h, w, all));
  v.push_back(item("block.ln2_mean", "LN2 mean per token", stat, R, ws, all));
  v.push_back(item("block.ln2_rstd", "LN2 1/std per token", stat, R, ws, all));
  v.push_back(item("block.fc", "fc output: GELU's input", in("4·"), 4 * N * h / t, w, all));
  v.push_back(item("block.gelu", "GELU output: fc-proj's input", in("4·"), 4 * N * h / t, w, all));
  return v;
}

std::vector<ActivationItem> head_items(const ActivationShape& s) {
  const Rows r = rows_of(s);
  const u64 R = r.outside, N = r.inside, h = s.hidden, w = s.width, ws = s.stat_width, t = s.tp;
  // The vocabulary-parallel head: every position's logits over this rank's V/t words (t = 1: all of V).
  const std::string probs = t > 1 ? r.in + "·V/t · w_s" : r.out + "·V · w_s";
  return {item("head.x", "last block's output: LN_f's input", r.out + "·h · w", R * h, w, true),
          item("head.lnf", "final LN output: the LM head's input", r.out + "·h · w", R * h, w, true),
          item("head.lnf_mean", "final LN mean per token", r.out + " · w_s", R, ws, true),
          item("head.lnf_rstd", "final LN 1/std per token", r.out + " · w_s", R, ws, true),
          item("head.probs", "softmax over the vocabulary (the loss)", probs, t > 1 ? N * (s.vocab / t) : R * s.vocab,
               ws, true)};
}

u64 kept_block_bytes(const ActivationShape& s) {
  u64 b = 0;
  for (const ActivationItem& i : block_items(s))
    if (i.kept) b += i.bytes;
  return b;
}

u64 activation_peak(const ActivationShape& s, u64 blocks, bool head) {
  const std::vector<ActivationItem> items = block_items(s);
  u64 x = 0, rest = 0;  // a block's input; the rest of its record
  for (const ActivationItem& i : items) (i.name == "block.x" ? x : rest) += i.bytes;
  u64 head_rest = 0;
  for (const ActivationItem& i : head_items(s))
    if (i.name != "head.x") head_rest += i.bytes;
  const bool full = s.recompute == Recompute::full;
  u64 alive = 0, peak = 0;
  auto add = [&](u64 b) { peak = std::max(peak, alive += b); };
  add(x);  // block 0's input (the embedding's output)
  for (u64 l = 0; l < blocks; ++l) {
    add(rest);                           // the record, as the block's forward allocates it
    if (l + 1 < blocks || head) add(x);  // the next block's (or the head's) input
    if (full) alive -= rest;             // full recompute keeps only the input
  }
  if (head) {
    add(head_rest);
    alive -= head_rest + x;  // the head's backward frees its record
  }
  for (u64 l = blocks; l-- > 0;) {
    if (full) add(rest);  // the record again, recomputed
    alive -= rest + x;    // the block's backward frees its record
  }
  return peak;
}

u64 chapter_block_bytes(const ActivationShape& s) {
  const u64 sbh = s.positions() * s.micro_batch * s.hidden, t = s.tp;  // with cp: s/c tokens, keys over all s
  const u64 quadratic = s.recompute == Recompute::none ? 5 * s.heads * s.positions() * s.seq * s.micro_batch / t : 0;
  if (s.recompute == Recompute::full) return 2 * sbh;
  if (s.sequence_parallel) return 34 * sbh / t + quadratic;
  return 10 * sbh + 24 * sbh / t + quadratic;  // t = 1: the chapter's 34·s·b·h + 5·a·s²·b
}

std::string chapter_block_formula(const ActivationShape& s) {
  const std::string sbh = s.cp > 1 ? "(s/c)·b·h" : "s·b·h";
  if (s.recompute == Recompute::full) return "2·" + sbh + " (full recompute)";
  const std::string q = s.recompute == Recompute::selective ? "" : s.tp > 1 ? " + 5·a·s/(h·t)" : " + 5·a·s/h";
  if (s.sequence_parallel) return sbh + "·(34/t" + q + ")";
  if (s.tp > 1) return sbh + "·(10 + 24/t" + q + ")";
  return sbh + "·(34" + q + ")";
}

std::vector<std::string> differences_from_chapter(const ActivationShape& s) {
  std::vector<std::string> d;
  if (s.cp > 1)
    d.push_back("context parallelism: each rank holds s/c = " + std::to_string(s.positions()) +
                " tokens of every sample, so every tensor counts s/c positions (the chapter's 34·s·b·h becomes "
                "34·(s/c)·b·h); " +
                (s.attention == AttentionKernel::flash
                     ? std::string("ring attention keeps no s² term — were it kept, it would be only the local tiles, "
                                   "(s/c)×s per rank: 5·a·(s/c)·s·b")
                     : std::string("the s² term is the local tiles only, (s/c)×s per rank: 5·a·(s/c)·s·b")) +
                "; the ring's K/V buffers are comm_buffer, not activations");
  if (s.tp > 1 && !s.sequence_parallel)
    d.push_back(
        "tensor parallelism splits what lies inside the regions (Q, K, V, the attention output, fc, GELU: 24 of "
        "the 34, and the s² term) by t; LN1's and LN2's inputs and outputs stay whole on every rank (8·s·b·h of "
        "Megatron's 10; the other 2 are dropout masks)");
  if (s.sequence_parallel)
    d.push_back(
        "sequence parallelism splits the rest along s: LN inputs and outputs, the residual stream and the "
        "head's input hold s/t positions per rank, so every tensor is divided by t");
  if (s.tp > 1) {
    const std::string why = s.sequence_parallel ? "the head's input is gathered along s first" : "not s·b·V";
    d.push_back(
        "the LM head is vocabulary-parallel: each rank keeps the probabilities of its V/t words for every "
        "position of the micro-batch (s·b·V/t: " +
        why + ")");
  }
  if (s.width != 2)
    d.push_back("activations are stored in " + std::to_string(s.width) +
                " bytes here (the chapter assumes 2: --mixed bf16 stores them as bf16)");
  d.push_back(
      "no dropout mask is stored: masks are regenerated from the counter-based RNG in backward (the chapter "
      "counts 1 byte per element: s·b·h after attention, s·b·h after the MLP" +
      std::string(s.attention == AttentionKernel::naive ? ", a·s²·b on the probabilities)" : ")") +
      (s.dropout > 0 ? "" : "; dropout is off in this run, but the chapter's formula counts them"));
  if (s.attention == AttentionKernel::naive && s.recompute != Recompute::selective)
    d.push_back(
        "the dropped-out probabilities are not stored: backward applies the regenerated mask to the kept "
        "probabilities (the chapter's 2·a·s²·b)");
  const std::string tok = s.cp > 1 ? "(s/c)" : "s";
  d.push_back("LayerNorm keeps its mean and 1/std per token (4·" + tok + "·b numbers per layer in w_s = " +
              std::to_string(s.stat_width) + " bytes), which the chapter's formula leaves out");
  if (s.attention == AttentionKernel::flash)
    d.push_back(
        "flash attention keeps no s² tensor (the chapter's 5·a·s²·b is gone, claim C5) but a log-sum-exp per "
        "(sample, head, position): a·" +
        tok + "·b numbers");
  if (s.recompute == Recompute::selective)
    d.push_back("selective recompute keeps no probabilities: backward recomputes them from Q and K (claim C28)");
  if (s.recompute == Recompute::full)
    d.push_back(
        "full recompute keeps only each block's input, s·b·h · w (Korthikanti et al.: 2·s·b·h); the "
        "block's forward runs again in backward (claim C27)");
  return d;
}

}  // namespace shardlab::plan
