// report/ep_report.cpp — the expert-parallel section of `shardlab plan` (see ep_report.h).
#include "report/ep_report.h"

#include "core/exact_sum.h"

#include <ostream>
#include <string>

#include "plan/ep_bytes.h"
#include "plan/tp_bytes.h"
#include "report/format.h"

namespace shardlab::plan {

namespace {
using u64 = std::uint64_t;

constexpr long double kGpuBytes = 80e9L;  // claim C1's 80 GB GPU

// The parameters one token's forward touches: every dense tensor, the router, k of the E experts per MoE block.
u64 active_params(const GptDims& d) {
  return gpt_param_count(d) - d.moe.blocks(d.layers) * (d.moe.experts - d.moe.top_k) * expert_param_count(d);
}
}  // namespace

GptDims mixtral_like(u64 seq) {
  // Mixtral 8x7B (Jiang et al. 2024, "Mixtral of Experts", arXiv:2401.04088, Table 1): dim 4096, n_layers 32,
  // hidden_dim 14336, n_experts 8, top_k_experts 2, vocab_size 32000 — every block's MLP is experts.
  ExpertDims moe;
  moe.experts = 8;
  moe.top_k = 2;
  moe.every = 1;
  moe.ffn = 14336;
  return GptDims{32000, seq, 4096, 32, moe};
}

void print_expert_parallel(std::ostream& out, const EpRequest& q, const Recipe& recipe) {
  const GptDims& d = q.gpt;
  const ExpertDims& m = d.moe;
  const u64 e = q.ep, E = m.experts, k = m.top_k, h = d.hidden, Lm = m.blocks(d.layers),
            w = u64(recipe.compute_bytes());
  const u64 expert = expert_param_count(d), total = gpt_param_count(d), active = active_params(d);
  const u64 mine = tp_param_count(d, 1, e), per_param = bytes_per_param(recipe).total();
  out << "\nExpert parallel over e = " << e << " (claim C25): E = " << E << " experts of width F = " << m.width(h)
      << " in " << Lm << " of " << d.layers << " blocks (l % " << m.every << " = 0), top-" << k << " per token\n";
  if (q.mixtral)
    out << "  the 7B-class example: Mixtral-8x7B-like (Jiang et al. 2024, \"Mixtral of Experts\", arXiv:2401.04088, "
           "Table 1:\n  h = 4096, L = 32, F = 14336, E = 8, top-2, V = 32000), in this trainer's GPT — GELU experts of "
           "two matrices, full\n  multi-head attention, learned positions: Mixtral's SwiGLU experts (three matrices) "
           "and grouped-query attention\n  give it 46.7B parameters, 12.9B active per token (the paper's numbers)\n";
  out << "  C25 \"experts live on different ranks\": rank r holds experts [r·E/e, (r+1)·E/e) of every MoE block, E/e = "
      << E / e << ";\n  the router and every dense tensor are whole on each rank\n";
  const Unit u = unit_for(total * per_param);
  Table t({"parameters", "formula", "count", "model states", u.name});
  auto row = [&](const std::string& what, const std::string& formula, u64 n) {
    t.row({what, formula, commas(n), commas(n * per_param), in_unit(n * per_param, u)});
  };
  row("one expert", "2·h·F + F + h", expert);
  row("the whole model", "dense + L_moe·(E·h + E·expert)", total);
  row("active per token", "dense + L_moe·(E·h + k·expert)", active);
  row("per rank at e = " + std::to_string(e), "dense + L_moe·(E·h + (E/e)·expert)", mine);
  t.print(out);
  out << "  model states at " << per_param << " B/param (" << recipe_label(recipe) << "): a rank holds "
      << fixed(100.0L * mine / total, 1) << "% of the whole model's";
  if (mine * per_param > kGpuBytes)
    out << "\n  — still " << fixed(mine * per_param / kGpuBytes, 2)
        << " × an 80 GB GPU: the dense part wants sharding too (ZeRO over dp, or tp)";
  out << "\n";
  if (q.strategy != Strategy::dp) {  // ZeRO/FSDP shard over the ranks that hold the same experts: dp, not dp·e
    const PerCategory st = per_rank_model_state_bytes(recipe, mine, Layout{q.strategy, q.dp, 0, q.accum});
    const u64 dense = mine - Lm * (E / e) * expert;
    const u64 gb = q.exact ? sizeof(ExactSum) : bytes_per_param(recipe)[Mem::grad];
    out << "  with " << strategy_label(q.strategy) << " over the dp = " << q.dp
        << " ranks that hold the same experts (not dp·e: the other ep ranks hold other\n  experts): "
        << commas(st.total()) << " B of model states per rank (" << model_state_formula(recipe, q.strategy)
        << ", Ψ the rank's " << commas(mine) << "); the dense gradients,\n  summed over dp by the reduce-scatter, "
        << "are then all-reduced over e on each shard:\n  2·(e−1)/e · dense/dp · " << gb
        << " B = " << commas(u64(2.0L * (e - 1) / e * dense / q.dp * gb)) << " B sent per step\n";
  }
  const EpLayerBytes b = ep_even_layer_bytes(q.seq * q.micro_batch, k, h, w, E, e);
  out << "  C25 \"each MoE layer does two all-to-alls (dispatch, combine)\": a rank routes s·b·k = " << q.seq << "·"
      << q.micro_batch << "·" << k << " = " << commas(b.rows) << " slots per micro-batch;\n  at an even load a "
      << "fraction (e−1)/e of them goes to other ranks' experts and comes back: s·b·k·h·w·(e−1)/e each way\n  (w = "
      << w << " B, the compute type; bf16 rows would send half)\n";
  const Unit v = unit_for(b.total() * Lm * q.accum);
  Table a({"per MoE layer and micro-batch", "bytes sent (= received)", v.name});
  auto line = [&](const std::string& what, u64 bytes) { a.row({what, commas(bytes), in_unit(bytes, v)}); };
  line("counts: E/e int32 to each other rank, (e−1)·(E/e)·4", b.counts);
  line("forward dispatch: the slots' rows to their experts", b.all_to_all);
  line("forward combine: the experts' outputs back", b.all_to_all);
  line("backward: output gradients, the dispatch's way", b.all_to_all);
  line("backward: input gradients, the combine's way", b.all_to_all);
  a.rule();
  line("per MoE layer (4 all-to-alls of rows + the counts)", b.total());
  line("per step: × L_moe = " + std::to_string(Lm) + " × A = " + std::to_string(q.accum), b.total() * Lm * q.accum);
  a.print(out);
  out << "  (--recompute full repeats the forward's three; the gradients then all-reduce the dense tensors over\n  "
         "dp·e = "
      << q.dp * e << " ranks and each expert's over dp = " << q.dp << (q.dp == 1 ? ": none" : "")
      << (q.strategy == Strategy::dp ? "" : "; sharded: see above") << ")\n";
  out << "  C25 \"routing is input-dependent, so load imbalance idles ranks\": these bytes assume every expert gets "
         "s·b·k/E slots;\n  the router decides per token, so one rank's experts may get more rows — it computes "
         "longer and sends more,\n  and every all-to-all waits for the slowest rank (the trace's \"moe combine\" "
         "spans); "
         "`plan --ledger` on a run puts the\n  measured bytes beside the even load's\n";
  out << "  C25 \"a load-balancing loss mitigates it\": α·E·Σ f_i·P_i per sample (Switch Transformer; f_i the slots "
         "routed to\n  expert i, P_i its mean probability) is smallest at an even load (--moe-aux-loss α); a capacity "
         "factor (--moe-capacity)\n  bounds each expert's rows, dropping the excess\n";
}

}  // namespace shardlab::plan
