// report/tp_report.cpp — the tensor-parallel section of `shardlab plan` (see tp_report.h).
#include "report/tp_report.h"

#include <ostream>
#include <string>

#include "plan/comm_volume.h"
#include "plan/tp_bytes.h"
#include "report/format.h"

namespace shardlab::plan {

namespace {
using u64 = std::uint64_t;
using ld = long double;

std::string mb(ld bytes) { return fixed(bytes / 1e6L, 1) + " MB"; }
std::string gb(ld bytes) { return fixed(bytes / 1e9L, 2) + " GB"; }

void print_states(std::ostream& out, const TpRequest& q, const Recipe& recipe, u64 psi, const GptDims* gpt) {
  const u64 t = q.tp;
  const PerCategory whole = model_state_bytes(recipe, psi);
  out << "Model states per rank (claim C19: TP splits params, grads and optimizer states by t)\n";
  if (!gpt) {
    out << "  " << gb(whole.total()) << " / " << t << " = " << gb(ld(whole.total()) / t)
        << " per rank (the chapter's Ψ/t: LayerNorms, biases and embeddings, replicated in practice, are left out)\n";
    return;
  }
  const u64 psi_t = tp_param_count(*gpt, t), rep = replicated_in_range(*gpt, t, 0, psi_t);
  const PerCategory mine = model_state_bytes(recipe, psi_t);
  out << "  Ψ_t = V·C + T·C + L·(12C²/t + 7C/t + 6C) + 2C + C·V/t = " << commas(psi_t) << " of Ψ = " << commas(psi)
      << " (" << commas(rep)
      << " replicated on every rank: embeddings, LayerNorms, the row-parallel biases; the LM head is split by\n"
      << "  vocabulary, V/t rows per rank)\n"
      << "  model states " << commas(mine.total()) << " B per rank against " << commas(whole.total()) << " B whole: 1/"
      << fixed(ld(whole.total()) / mine.total(), 2) << " (Ψ/t would be 1/" << t << ")\n";
}

void print_comm(std::ostream& out, const TpRequest& q, const ActivationDims& a) {
  const u64 t = q.tp, n = a.micro_batch * a.seq * a.hidden, L = a.layers;
  const ld tensor = ld(n) * 2;                // the chapter's bf16 activations
  const ld approx = 2 * tensor;               // "~2× the tensor"
  const ld exact = tensor * 2 * (t - 1) / t;  // what a ring all-reduce sends per rank (claim C8)
  const u64 calls = 4 * L;
  out << "\nCommunication per micro-batch (claims C17, C18): 4 all-reduces per layer (2 forward: the partial sums of\n"
      << "W^O and fc-proj; 2 backward: the gradients entering LN1 and LN2), each of the (b, s, h) activation tensor\n"
      << "  b·s·h = " << a.micro_batch << "·" << a.seq << "·" << a.hidden << " = " << commas(n) << " elements, "
      << mb(tensor) << " in bf16\n"
      << "  ring traffic per all-reduce: ~2 × the tensor = " << mb(approx) << " (the chapter's round number); a ring\n"
      << "  all-reduce sends exactly 2(t−1)/t × the tensor per rank = " << mb(exact) << " at t = " << t << "\n"
      << "  all-reduces per micro-batch: 4 × L = 4 × " << L << " = " << calls << "\n";
  Table tab({std::to_string(calls) + " all-reduces", "bytes", "at " + shortest(q.intra_gbps) + " GB/s (intra-node)",
             "at " + shortest(q.inter_gbps) + " GB/s (inter-node)"});
  for (const auto& [label, per] : {std::pair{"~2× tensor (chapter)", approx}, std::pair{"2(t−1)/t exact", exact}}) {
    const ld bytes = per * calls;
    tab.row(
        {label, gb(bytes), seconds_text(bytes / (q.intra_gbps * 1e9L)), seconds_text(bytes / (q.inter_gbps * 1e9L))});
  }
  tab.print(out);
  out << "  synchronous: each all-reduce sits between two GEMMs that need its result, so nothing overlaps it; at\n"
         "  inter-node speed the step waits ~"
      << fixed(q.intra_gbps / q.inter_gbps, 0)
      << "× longer for it — tensor parallelism stays inside a node (C18, C19)\n";
  out << "  + the vocabulary-parallel LM head (V/t rows of it per rank): Megatron's parallel cross-entropy's 3\n"
         "  all-reduces of b·s numbers (row max, Σ exp, target logit) forward and 1 of b·s·h (the head input's\n"
         "  gradient) backward, per micro-batch (purpose \"vocab\"; plan/tp_bytes.h)\n";
  if (q.sequence_parallel)
    out << "  with sequence parallelism each all-reduce becomes an all-gather + a reduce-scatter of the same tensor:\n"
           "  (t−1)/t + (t−1)/t = the same 2(t−1)/t (C23); backward also re-gathers each region's input for the\n"
           "  weight gradients (+2 all-gathers per layer: the price of keeping only the sequence shard of it)\n";
}

void print_megatron_table(std::ostream& out, const TpRequest& q, const ActivationDims& a) {
  const u64 t = q.tp, sbh = a.seq * a.micro_batch * a.hidden;
  const u64 quad = 5 * a.heads * a.seq * a.seq * a.micro_batch;  // 5·a·s²·b
  out << "\nActivations per layer, Megatron's table for these dims (Korthikanti et al. 2022, Table 2; 2-byte\n"
         "activations, 1-byte dropout masks)\n";
  Table tab({"layout", "formula", "bytes", "GB"});
  auto row = [&](const char* layout, const char* formula, u64 bytes) {
    tab.row({layout, formula, commas(bytes), fixed(ld(bytes) / 1e9L, 3)});
  };
  row("no parallelism", "s·b·h·(34 + 5·a·s/h)", 34 * sbh + quad);
  row("tensor parallel", "s·b·h·(10 + 24/t + 5·a·s/(h·t))", 10 * sbh + 24 * sbh / t + quad / t);
  row("tensor + sequence parallel", "s·b·h·(34/t + 5·a·s/(h·t))", 34 * sbh / t + quad / t);
  row("tensor parallel, selective recompute", "s·b·h·(10 + 24/t)", 10 * sbh + 24 * sbh / t);
  row("tensor + sequence, selective", "s·b·h·34/t", 34 * sbh / t);
  row("full recompute", "2·s·b·h", 2 * sbh);
  tab.print(out);
  out << "  (t = " << t << "; what this trainer keeps instead, tensor by tensor, is in the itemised table below)\n";
}
}  // namespace

void print_tensor_parallel(std::ostream& out, const TpRequest& q, const Recipe& recipe, u64 psi, const GptDims* gpt,
                           const ActivationDims& act) {
  out << "\nTensor parallel over t = " << q.tp << (q.sequence_parallel ? " with sequence parallelism" : "")
      << " (claims C17–C19" << (q.sequence_parallel ? ", C23" : "") << "): each rank holds a/t = " << act.heads / q.tp
      << " heads and 4h/t = " << 4 * act.hidden / q.tp << " MLP columns of every layer\n";
  print_states(out, q, recipe, psi, gpt);
  print_comm(out, q, act);
  print_megatron_table(out, q, act);
}

}  // namespace shardlab::plan
