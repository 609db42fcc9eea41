// report/cp_report.cpp — the context-parallel section of `shardlab plan` (see cp_report.h).
#include "report/cp_report.h"

#include <algorithm>
#include <ostream>
#include <string>

#include "plan/cp_bytes.h"
#include "plan/exact_cp_bytes.h"
#include "report/format.h"

namespace shardlab::plan {

namespace {
using u64 = std::uint64_t;
using ld = long double;

std::string span(u64 first, u64 count) {
  return "[" + std::to_string(first) + ", " + std::to_string(first + count) + ")";
}

// The positions rank r holds, as runs of the sequence.
std::string tokens_of(u64 seq, u64 c, ContextSplit split, u64 r) {
  if (split == ContextSplit::contiguous) return span(r * (seq / c), seq / c);
  const u64 m = seq / (2 * c);
  return span(r * m, m) + " + " + span((2 * c - 1 - r) * m, m);
}

// Which tokens each rank holds under both splits, and the causal work each split leaves it (C24's balance).
void print_split(std::ostream& out, const CpRequest& q, u64 seq) {
  const u64 c = q.cp;
  const bool zig = q.split == ContextSplit::zigzag, zig_ok = seq % (2 * c) == 0;
  out << "  which tokens each rank holds, and the (query, key) pairs it scores under the causal mask per sample and\n"
         "  head (its attention work); * = --cp-split\n";
  Table t({"rank", std::string(zig ? "* " : "  ") + "zigzag: tokens", "pairs",
           std::string(zig ? "  " : "* ") + "contiguous: tokens", "pairs"});
  auto row = [&](u64 r) {
    t.row({std::to_string(r), zig_ok ? tokens_of(seq, c, ContextSplit::zigzag, r) : "-",
           zig_ok ? commas(cp_causal_pairs(seq, c, ContextSplit::zigzag, r)) : "-",
           tokens_of(seq, c, ContextSplit::contiguous, r),
           commas(cp_causal_pairs(seq, c, ContextSplit::contiguous, r))});
  };
  for (u64 r = 0; r < c; ++r) {
    if (c > 8 && r == 3) {
      t.row({"…", "", "", "", ""});
      r = c - 2;
    }
    row(r);
  }
  t.print(out);
  const ld first = cp_causal_pairs(seq, c, ContextSplit::contiguous, 0),
           last = cp_causal_pairs(seq, c, ContextSplit::contiguous, c - 1);
  out << "  contiguous: the last rank scores " << fixed(last / first, 2)
      << "× the first's pairs (→ 2c−1 = " << 2 * c - 1
      << " as s/c grows)\n  and every ring step waits for it; zigzag (chunks r and 2c−1−r of s/2c): every rank the "
         "same\n";
}

void print_ring(std::ostream& out, const CpShape& s, const CpRequest& q) {
  const CpLayerTraffic per = cp_layer_traffic(s);
  const CpStepBytes step = cp_step_bytes(s);
  const Unit u = unit_for(step.total());
  const u64 Tc = cp_tokens_per_rank(s);
  out << "  C24 \"ring attention circulates K/V blocks\": a message is the K and V of one rank's tokens and heads,\n"
      << "  2·b·(s/c)·(h/t) = 2·" << s.micro_batch << "·" << Tc << "·" << s.hidden / s.tp << " = "
      << commas(cp_message_elements(s)) << " elements × e = " << s.elem_bytes << " B = " << commas(per.message_bytes)
      << " B\n  (e: the trainer's compute type; a bf16 ring would send half)\n";
  Table t({"per layer and micro-batch", "messages", "formula", "bytes", u.name});
  auto row = [&](const char* what, u64 n, const char* formula, u64 bytes) {
    t.row({what, std::to_string(n), formula, commas(bytes), in_unit(bytes, u)});
  };
  row("forward: K/V around the ring", per.forward_messages, "(c−1)·2·b·(s/c)·(h/t)·e", per.forward_bytes());
  if (per.recompute_messages)
    row("recomputed forward (--recompute full)", per.recompute_messages, "(c−1)·2·b·(s/c)·(h/t)·e",
        per.recompute_bytes());
  row("backward: K/V again, dK/dV home", per.backward_messages, "(2c−1)·2·b·(s/c)·(h/t)·e", per.backward_bytes());
  t.rule();
  row("per layer", per.messages(), "", per.bytes());
  const std::string times = "per step: × L = " + std::to_string(s.blocks) + " × A = " + std::to_string(s.accum);
  t.row({times, commas(step.messages), "", commas(step.total()), in_unit(step.total(), u)});
  t.print(out);
  out << "  every rank sends this and receives as much (the ring is symmetric); the gradients then add over dp × cp\n"
      << "  like data parallelism's (ring volumes with N = dp·c); evaluation's forwards are booked apart\n";
  if (q.exact) {  // plan/exact_cp_bytes.h
    const ExactCpStep x = exact_cp_step(s, true);
    out << "  --exact: no ring — each tensor-parallel region runs b/c whole samples per cp rank, its rows gathered by\n"
        << "  an all-to-all on the way in and sent home on the way out: A·(L·" << x.per_block
        << " + 3 for the head) = " << commas(x.calls)
        << " all-to-alls\n  of (c−1)·(b/c)·(s/c)·h·e = " << commas(x.sent_per_call)
        << " B sent each: " << commas(x.sent()) << " B per step (last stage), "
        << fixed(double(x.sent()) / double(std::max<u64>(1, step.total())), 2) << " × the ring's\n";
  }
  out << "  C24 \"merges partial results exactly with online softmax\": each visiting block's partial (max, sum, "
         "output)\n"
      << "  per query row is folded into the running one by the log-sum-exp rule (flash attention's, C5); kept for\n"
      << "  backward: one log-sum-exp per (sample, head, token), a·(s/c)·b/t = "
      << commas(s.heads / q.tp * Tc * s.micro_batch) << " values (block.lse), no s² tensor\n";
  const u64 flops = 4 * s.micro_batch * Tc * Tc * (s.hidden / s.tp);
  out << "  C24 \"overlaps K/V transfer with compute\": each hop's send and receive are posted before the\n"
      << "  visiting block is computed (two K/V buffers); a whole block costs 4·b·(s/c)²·(h/t) = " << commas(flops)
      << " FLOPs\n  forward for its " << commas(per.message_bytes)
      << " B: 2·(s/c)/e = " << shortest(2.0L * Tc / s.elem_bytes)
      << " FLOPs per byte,\n  growing with the context — the transfer hides when that beats the GPU's FLOP/s ÷ the "
         "link's bytes/s\n";
}

void print_activations_per_rank(std::ostream& out, const CpRequest& q, const ActivationDims& a) {
  const u64 c = q.cp, s = a.seq, Tc = s / c, b = a.micro_batch, h = a.hidden;
  const u64 linear = 34 * s * b * h, linear_c = 34 * Tc * b * h;
  const u64 quad = 5 * a.heads * s * s * b, quad_c = 5 * a.heads * Tc * s * b;  // the local tiles (s/c)×s
  const Unit u = unit_for((linear + quad) * a.layers);
  out << "\nActivations per layer on one rank, the chapter's s·b·h·(34 + 5·a·s/h) with s/c tokens (2-byte; claims C4,\n"
      << "C5, C24; t = 1 — the itemised table below has this trainer's own, with t): * = this layout\n";
  Table t({"layout", "linear", "s² term", "per layer", "× L"});
  auto row = [&](const std::string& what, u64 lin, u64 sq) {
    t.row({what, in_unit(lin, u), in_unit(sq, u), in_unit(lin + sq, u), in_unit((lin + sq) * a.layers, u)});
  };
  row("  one GPU, naive: 34·s·b·h + 5·a·s²·b", linear, quad);
  row("  one GPU, flash: 34·s·b·h", linear, 0);
  row("* cp rank, ring attention (flash): 34·(s/c)·b·h", linear_c, 0);
  row("  cp rank were the scores kept: + 5·a·(s/c)·s·b", linear_c, quad_c);
  t.print(out);
  out << "  ring attention keeps no s² term; kept, the chapter's s² term would be only the local tiles — (s/c)×s per\n"
      << "  rank, " << in_unit(quad_c, u) << " here against " << in_unit(quad, u) << " on one GPU: ÷c, not ÷c²\n";
}
}  // namespace

void print_context_parallel(std::ostream& out, const CpRequest& q, const Recipe& recipe, const ActivationDims& a,
                            Recompute recompute) {
  CpShape s;
  s.seq = a.seq;
  s.micro_batch = a.micro_batch;
  s.hidden = a.hidden;
  s.heads = a.heads;
  s.tp = q.tp;
  s.cp = q.cp;
  s.blocks = q.blocks ? q.blocks : a.layers;
  s.accum = q.accum;
  s.recompute = recompute;
  s.elem_bytes = u64(recipe.compute_bytes());
  out << "\nContext parallel over c = " << q.cp << " (" << word_of(kContextSplitWords, q.split)
      << " split; claim C24): every sample's s = " << a.seq
      << " tokens are cut over the cp ranks,\n  s/c = " << cp_tokens_per_rank(s) << " on each"
      << (q.tp > 1 ? "; heads over t = " + std::to_string(q.tp) : "") << "\n";
  if (q.attention_defaulted)
    out << "  (ring attention is flash attention's online softmax over visiting key blocks: --attention flash "
           "assumed)\n";
  out << "  C24 \"shard tokens\": everything per token — LayerNorm, the MLP, dropout, the residual, the head — runs on "
         "a\n"
         "  rank's own tokens unchanged; only attention, which needs every earlier token, reaches the other ranks\n";
  print_split(out, q, a.seq);
  print_ring(out, s, q);
  print_activations_per_rank(out, q, a);
  const CpRingBuffers rb = cp_ring_buffers(s, a.micro_batch);
  out << "  the ring's buffers per rank: comm_buffer 5 messages (two K/V, three dK/dV) = " << commas(rb.comm_buffer)
      << " B;\n  workspace: the running sum b·(a/t)·(s/c)·e and a tile scratch = " << commas(rb.workspace()) << " B\n";
}

}  // namespace shardlab::plan
