// report/plan_report.cpp — the tables of `shardlab plan` (see plan_report.h).
#include "report/plan_report.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <ostream>
#include <sstream>

#include "plan/activation_items.h"
#include "plan/moe_items.h"
#include "report/format.h"

namespace shardlab::plan {

namespace {

using u64 = std::uint64_t;

constexpr long double kGpuBytes = 80e9L;  // claim C1: "80 GB GPU"

// ---- the plan tables ---------------------------------------------------------------------------
void print_model_states(std::ostream& out, const Recipe& r, u64 psi) {
  const PerCategory per = bytes_per_param(r);
  const PerCategory bytes = model_state_bytes(r, psi);
  const Unit u = unit_for(bytes.total());
  out << "Model states (claim C1): bytes per parameter × Ψ; no batch or sequence in them (C6)\n";
  Table t({"category", "B/param", "bytes", u.name});
  for (int i = 0; i < kNumCategories; ++i)
    t.row({mem_name(category_at(i)), std::to_string(per.v[i]), commas(bytes.v[i]), in_unit(bytes.v[i], u)});
  t.rule();
  t.row({"total", std::to_string(per.total()), commas(bytes.total()), in_unit(bytes.total(), u)});
  t.print(out);
  const long double gpus = bytes.total() / kGpuBytes;
  if (gpus <= 1)
    out << "  fits in one 80 GB GPU" << (gpus >= 1e-3L ? " (" + fixed(100 * gpus, 1) + "% of it)" : "")
        << " before any activation\n";
  else
    out << "  = " << fixed(gpus, 2) << " × an 80 GB GPU: model states alone need "
        << static_cast<u64>(std::ceil(gpus - 1e-12L)) << " of them (claim C1)\n";
  const u64 pg = per[Mem::param] + per[Mem::grad];
  if (per.optimizer_total() > 0)
    out << "  param + grad alone (" << pg << " B/param) would be " << fixed(100.0L * pg / per.total(), 0)
        << "% of this: forgetting the optimizer's\n  " << per.optimizer_total()
        << " B/param is the common underestimate (claim C3)\n";
  out << "\n";
}

void print_variants(std::ostream& out, const Recipe& chosen, u64 psi) {
  using O = Optimizer;
  const Mixed bf16 = Mixed::bf16, pure = Mixed::none;
  const Dtype f32 = Dtype::f32, f64 = Dtype::f64;
  const GradAccum a16 = GradAccum::bf16, a32 = GradAccum::fp32;
  const Master m32 = Master::fp32, none = Master::none;
  const struct {
    const char* label;
    Recipe r;
  } rows[] = {{"adamw, mixed bf16 (C1)", {O::adamw, bf16, f32, a16, m32, 0.9}},
              {"adamw, bf16 + fp32 grad accum (C3)", {O::adamw, bf16, f32, a32, m32, 0.9}},
              {"adamw, bf16, no master", {O::adamw, bf16, f32, a16, none, 0.9}},
              {"adamw, fp32", {O::adamw, pure, f32, a16, none, 0.9}},
              {"adamw, fp64", {O::adamw, pure, f64, a16, none, 0.9}},
              {"sgd+momentum, mixed bf16 (C3)", {O::sgd, bf16, f32, a16, m32, 0.9}},
              {"sgd+momentum, fp32", {O::sgd, pure, f32, a16, none, 0.9}},
              {"sgd+momentum, fp64", {O::sgd, pure, f64, a16, none, 0.9}},
              {"sgd, momentum 0, fp32", {O::sgd, pure, f32, a16, none, 0.0}},
              {"adam8bit, mixed bf16 (C3)", {O::adam8bit, bf16, f32, a16, m32, 0.9}}};
  const Unit u = unit_for(model_state_bytes(rows[4].r, psi).total());  // fp64 is the largest
  out << "Recipes side by side, same Ψ (claims C1, C3); * = the recipe above\n";
  Table t({"recipe", "param", "grad", "master", "adam_m", "adam_v", "momentum", "optimizer", "B/param", u.name});
  const PerCategory mine = bytes_per_param(chosen);
  for (const auto& row : rows) {
    const PerCategory b = bytes_per_param(row.r);
    std::vector<std::string> cells = {std::string(b.v == mine.v ? "* " : "  ") + row.label};
    for (u64 x : b.v) cells.push_back(std::to_string(x));
    cells.push_back(std::to_string(b.optimizer_total()));
    cells.push_back(std::to_string(b.total()));
    cells.push_back(in_unit(b.total() * psi, u));
    t.row(cells);
  }
  t.print(out);
  out << "  adam8bit: the chapter's \"12 bytes shrink to ~3\" read literally (each 4-byte optimizer state\n"
         "  at 1 byte); real 8-bit Adam keeps m, v at 1 B and the master as configured: 2 to 6 B.\n\n";
}

void print_activations(std::ostream& out, const ActivationDims& d, AttentionKernel chosen, u64 model_bytes) {
  const ActivationEstimate naive = estimate_activations(d, AttentionKernel::naive);
  const ActivationEstimate flash = estimate_activations(d, AttentionKernel::flash);
  const Unit u = unit_for(std::max(naive.total, model_bytes));
  const u64 sbh = d.seq * d.micro_batch * d.hidden;
  out << "Activations per layer ≈ s·b·h·(34 + 5·a·s/h) bytes, 2-byte activations (claims C4, C5)\n"
      << "  s=" << d.seq << " b=" << d.micro_batch << " h=" << d.hidden << " a=" << d.heads << " L=" << d.layers
      << ": s·b·h = " << commas(sbh) << ", 5·a·s/h = " << shortest(5.0L * d.heads * d.seq / d.hidden)
      << "; * = --attention\n";
  Table t({"attention", "linear/layer", "quadratic/layer", "per layer", "× L", "whole model"});
  for (const auto& [a, e] : {std::pair{AttentionKernel::naive, naive}, std::pair{AttentionKernel::flash, flash}})
    t.row({std::string(a == chosen ? "* " : "  ") + attention_name(a), in_unit(e.linear_per_layer, u),
           in_unit(e.quadratic_per_layer, u), in_unit(e.per_layer, u), std::to_string(d.layers), in_unit(e.total, u)});
  t.print(out);
  out << "\nOne GPU, no parallelism: model states + activations (claim C6: only activations move with b, s,\n"
         "attention kernel and recompute)\n";
  Table m({"attention", "model states", "activations", "total"});
  for (const auto& [a, e] : {std::pair{AttentionKernel::naive, naive}, std::pair{AttentionKernel::flash, flash}})
    m.row({std::string(a == chosen ? "* " : "  ") + attention_name(a), in_unit(model_bytes, u), in_unit(e.total, u),
           in_unit(model_bytes + e.total, u)});
  m.print(out);
  if (naive.total > model_bytes)
    out << "  naive activations exceed the model states at b=" << d.micro_batch << " (claim C4)\n";
}

// What this trainer keeps, tensor by tensor (plan/activation_items.h; the ledger books the same items).
void print_items(std::ostream& out, const ActivationShape& s, bool with_head) {
  std::vector<ActivationItem> items = block_items(s);
  const u64 kept = kept_block_bytes(s), chapter = chapter_block_bytes(s);
  const Unit u = unit_for(std::max(kept, chapter));
  out << "\nThe tensors this trainer keeps per layer and micro-batch"
      << (s.tp > 1 ? " on each of t = " + std::to_string(s.tp) + " tensor-parallel ranks" +
                         (s.sequence_parallel ? " with sequence parallelism" : "")
                   : "")
      << (s.cp > 1 ? std::string(s.tp > 1 ? " and" : " on each of") + " c = " + std::to_string(s.cp) +
                         " context-parallel ranks (s/c = " + std::to_string(s.positions()) + " tokens of each sample)"
                   : "")
      << " (w = " << s.width << " B, w_s = " << s.stat_width << " B; " << attention_name(s.attention)
      << " attention, recompute " << recompute_name(s.recompute)
      << "); `plan --ledger` checks a run's ledger against these, byte for byte\n";
  Table t({"item", "what", "elements", "bytes", u.name, "kept"}, 3);
  auto rows = [&](const std::vector<ActivationItem>& v) {
    for (const ActivationItem& i : v)
      t.row({i.name, i.what, i.formula, commas(i.bytes), in_unit(i.bytes, u), i.kept ? "yes" : "recomputed"});
  };
  rows(items);
  t.rule();
  t.row({"kept per layer", "", "", commas(kept), in_unit(kept, u), ""});
  t.row({"× L", "", "", commas(kept * s.layers), in_unit(kept * s.layers, u), ""});
  t.row({"chapter: " + chapter_block_formula(s),
         std::string(s.tp > 1 ? "Korthikanti et al. 2022, 2-byte" : "2-byte activations") +
             (s.cp > 1 ? ", s/c tokens" : ""),
         "", commas(chapter), in_unit(chapter, u), ""});
  if (s.moe.on()) {  // a MoE block's own tensors in place of fc and GELU (claim C25; plan/moe_items.h)
    t.rule();
    u64 moe_kept = 0;
    for (const ActivationItem& i : moe_block_items(s, dropless_rows(s))) {
      if (i.kept) moe_kept += i.bytes;
      if (is_moe_item(i.name))
        t.row({i.name, i.what, i.formula, commas(i.bytes), in_unit(i.bytes, u), i.kept ? "yes" : "recomputed"});
    }
    t.row({"kept per MoE layer", "no block.fc, block.gelu; n = m = s·b·k", "", commas(moe_kept), in_unit(moe_kept, u),
           ""});
  }
  if (with_head) {
    t.rule();
    rows(head_items(s));
  }
  t.print(out);
  if (s.moe.on())
    out << "  MoE blocks (l % " << s.moe.every << " = 0, " << s.moe.blocks(s.layers)
        << " of them): dropless on one process n = m = s·b·k = " << commas(moe_routed_slots(s))
        << " rows; with a capacity or --ep the routing decides (a run's ledger records them)\n";
  if (with_head)
    out << "  activation peak of one micro-batch through the whole model (forward, then backward): "
        << commas(s.moe.on() ? moe_model_activation_peak(s) : activation_peak(s, s.layers, true)) << " B\n";
  out << "  differences from the chapter's formula:\n";
  for (const std::string& d : differences_from_chapter(s)) out << "  - " << d << "\n";
}

}  // namespace

void print_plan(std::ostream& out, const PlanRequest& o) {
  const bool preset = o.preset_given;
  const u64 psi = o.psi();
  out << "shardlab plan: the chapter's memory formulas (1 GB = 1e9 bytes)\n";
  if (preset) {
    out << "model:  preset " << o.preset.name << ", Ψ = " << commas(psi) << " (the chapter's round number)\n";
    if (o.preset.name == "70b")
      out << "        the chapter gives no 70B shape; activations use h=8192 L=80 a=64 (our choice)\n";
  } else {
    const u64 counted = gpt_param_count(o.gpt);
    out << "model:  GPT V=" << o.gpt.vocab << " T=" << o.gpt.seq << " C=" << o.gpt.hidden << " L=" << o.gpt.layers
        << " heads=" << o.act.heads << ": " << commas(counted)
        << " params, N_matmul = " << commas(gpt_matmul_param_count(o.gpt)) << ", "
        << commas(gpt_flops_per_token(o.gpt, o.gpt.seq)) << " model FLOPs/token\n";
    if (o.gpt.moe.on())
      out << "        experts: E = " << o.gpt.moe.experts << ", top-" << o.gpt.moe.top_k << ", width "
          << o.gpt.moe.width(o.gpt.hidden) << " in blocks l % " << o.gpt.moe.every
          << " = 0 (claim C25): every parameter counted, the N_matmul a token uses\n";
    out << "        Ψ = " << commas(psi) << (o.params ? " (from --params)" : " (counted from the dims)") << "\n";
  }
  out << "recipe: " << recipe_label(o.recipe) << "\n\n";
  print_model_states(out, o.recipe, psi);
  print_variants(out, o.recipe, psi);
  print_activations(out, o.act, o.attention, model_state_bytes(o.recipe, psi).total());
  ActivationShape s;
  s.seq = o.act.seq;
  s.micro_batch = o.act.micro_batch;
  s.hidden = o.act.hidden;
  s.heads = o.act.heads;
  s.layers = o.act.layers;
  s.vocab = o.gpt.vocab;
  const bool f64 = o.recipe.mixed == Mixed::none && o.recipe.dtype == Dtype::f64;
  s.width = o.recipe.mixed == Mixed::bf16 ? 2 : f64 ? 8 : 4;
  s.stat_width = f64 ? 8 : 4;
  s.attention = o.attention;
  s.recompute = o.recompute;
  s.dropout = o.dropout;
  if (!preset) s.moe = o.gpt.moe;
  if (o.tp_given) {
    print_tensor_parallel(out, o.tp, o.recipe, psi, preset || o.params ? nullptr : &o.gpt, o.act);
    s.tp = o.tp.tp;
    s.sequence_parallel = o.tp.sequence_parallel;
  }
  if (o.cp_given) {
    print_context_parallel(out, o.cp, o.recipe, o.act, o.recompute);
    s.cp = o.cp.cp;
  }
  print_items(out, s, !preset);
  if (o.sharding) {
    out << "\n";
    print_sharding(out, o.recipe, psi, o.dp, o.act, o.attention);
  }
  if (o.pp_given) print_pipeline(out, o.pp, o.recipe, psi, o.act);
  if (o.ep_given) print_expert_parallel(out, o.ep, o.recipe);
}

bool find_preset(const std::string& name, Preset* out) {
  if (name == "7b")  // claims C1, C4: the chapter's 7B example (h, L, a, s, b)
    *out = Preset{"7b", 7000000000ULL, ActivationDims{4096, 32, 32, 2048, 1}};
  else if (name == "70b")  // claim C1: Ψ = 70e9; h=8192 L=80 a=64 is our choice, not the chapter's
    *out = Preset{"70b", 70000000000ULL, ActivationDims{8192, 80, 64, 2048, 1}};
  return name == "7b" || name == "70b";
}

}  // namespace shardlab::plan
