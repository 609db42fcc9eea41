// `shardlab plan`: the chapter's formulas for a preset (the chapter's 7B / 70B), for this project's GPT
// dims or for a raw parameter count, with the recipe, attention kernel and data-parallel layout given
// by flags, the model's experts by --moe-*, with --tp, --pp, --cp and --ep their sections (report/plan_report.h prints
// them); `--ledger RUN/ledger.json` checks a run's measured bytes against the formulas, every rank, to the byte
// (exit 1 on any difference); `--search` ranks every layout of N GPUs instead (cli/plan_search.cpp), `--predict`
// predicts one layout of the trainer rank by rank (cli/plan_predict.cpp). The command's entry: cli/plan_command.cpp.
#include <algorithm>
#include <iostream>
#include <limits>
#include <ostream>

#include "check/ledger_report.h"
#include "cli/command.h"
#include "cli/moe_flags.h"
#include "parallel/pipeline_partition.h"
#include "parallel/schedule.h"
#include "report/plan_report.h"
#include "train/exact_cp_rules.h"

namespace shardlab {
namespace plan {

namespace {

using u64 = std::uint64_t;

struct Fail {
  std::string message;
};

// The flags' values as given; strings for the enumerations, parsed below with plan's own words.
struct PlanFlags {
  std::string preset, ledger, optimizer = "adamw", mixed = "bf16", dtype = "f32", grad_accum = "bf16", master = "fp32",
                              attention = "naive", recompute = "none", zero = "0", fsdp = "no_shard";
  u64 layers = 4, hidden = 128, heads = 4, seq = 64, vocab = 256, params = 0, micro_batch = 1;
  u64 dp = 1, ranks_per_node = 0, accum = 1, tp = 1;
  bool sequence_parallel = false, exact = false;
  u64 cp = 1;
  ContextSplit cp_split = ContextSplit::zigzag;
  int pp = 1, micro_batches = 4, virtual_stages = 2;
  u64 ep = 1;
  MoeFlags moe;
  double momentum = 0.9, intra_gbps = 300, inter_gbps = 25, dropout = 0;
};

void define(Flags& f, PlanFlags& v) {
  f.group("Model (the trainer's GPT by default)");
  f.choice("--preset", v.preset, {"7b", "70b"},
           "the chapter's examples (fixes the model; --seq and --micro-batch may be added)");
  f.add("--layers", v.layers, "transformer blocks L");
  f.add("--hidden", v.hidden, "hidden size C");
  f.add("--heads", v.heads, "attention heads a");
  f.add("--seq", v.seq, "sequence length s");
  f.add("--vocab", v.vocab, "vocabulary size V");
  f.add("--params", v.params, "a raw parameter count Ψ (e.g. 7e9) instead of the dims");
  f.add("--micro-batch", v.micro_batch, "micro-batch b of the activation estimate");
  f.group("Recipe (the chapter's by default)");
  f.choice("--optimizer", v.optimizer, {"adamw", "sgd", "adam8bit"}, "optimizer (adam8bit: plan only)");
  f.add("--momentum", v.momentum, "SGD momentum, in [0, 1); 0 keeps no state");
  f.choice("--mixed", v.mixed, {"none", "bf16"}, "mixed precision");
  f.choice("--dtype", v.dtype, {"f32", "f64"}, "compute type (f64 alone means pure f64)");
  f.choice("--grad-accum-dtype", v.grad_accum, {"bf16", "fp32"}, "gradient storage with mixed bf16");
  f.choice("--master", v.master, {"fp32", "none"}, "master weights with mixed bf16");
  f.choice("--attention", v.attention, {"naive", "flash"}, "attention kernel of the activation estimate");
  f.choice("--recompute", v.recompute, {"none", "selective", "full"}, "what the blocks recompute in backward");
  f.add("--dropout", v.dropout, "dropout probability (masks are never stored: shown beside the chapter's count)");
  f.group("Data-parallel layout (with --dp)");
  f.add("--dp", v.dp, "data-parallel ranks N");
  f.choice("--zero", v.zero, {"0", "1", "2", "3"}, "ZeRO stage");
  f.choice("--fsdp", v.fsdp, {"full", "grad_op", "no_shard", "hybrid"}, "FSDP strategy (instead of --zero)");
  f.add("--ranks-per-node", v.ranks_per_node, "ranks per node K (default 8 with --preset)");
  f.add("--accum", v.accum, "micro-batches per optimizer step A");
  f.flag("--exact", v.exact, "the exact mode's bytes (order-free 32-byte gradient sums) beside the normal mode's");
  f.add("--intra-gbps", v.intra_gbps, "intra-node link speed in GB/s");
  f.add("--inter-gbps", v.inter_gbps, "inter-node link speed in GB/s");
  f.group("Tensor-parallel layout (with --tp)");
  f.add("--tp", v.tp, "tensor-parallel ranks t: model states, the C18 communication and activations per rank");
  f.flag("--sequence-parallel", v.sequence_parallel, "with --tp: LayerNorm, dropout and residual split along s too");
  f.group("Pipeline (with --pp)");
  f.add("--pp", v.pp,
        "pipeline stages p: the bubble of each schedule, the stash, point-to-point bytes; 3D with --tp/--dp");
  f.add("--micro-batches", v.micro_batches, "micro-batches per step m");
  f.add("--virtual-stages", v.virtual_stages, "model chunks per stage v of the interleaved column");
  f.group("Context parallel (with --cp)");
  f.add("--cp", v.cp,
        "context-parallel ranks c: tokens per rank, ring attention's bytes per layer and step, activations ÷ c (C24)");
  f.choice("--cp-split", v.cp_split, kContextSplitWords,
           "which tokens a cp rank holds: zigzag (chunks r and 2c−1−r) or contiguous");
  f.group("Mixture of experts (claim C25)");
  define_moe_flags(f, v.moe);
  f.add("--ep", v.ep,
        "expert-parallel ranks e: E/e experts per rank, the all-to-alls per MoE layer (with --preset 7b: a "
        "Mixtral-8x7B-like model)");
  f.group("Check a run");
  f.add("--ledger", v.ledger, "RUN/ledger.json: measured vs formula, every rank (exit 1 on any difference)");
}

// --dp and the flags that only mean something with it (claims C7–C16).
void sharding_request(const Flags& f, const PlanFlags& v, PlanRequest& o) {
  auto has = [&](const char* n) { return f.given(n); };
  if (!has("--dp")) {
    for (const char* n : {"--zero", "--fsdp", "--ranks-per-node", "--accum", "--exact"})
      if (has(n)) throw Fail{std::string(n) + " needs --dp N"};
    for (const char* n : {"--intra-gbps", "--inter-gbps"})
      if (has(n) && !has("--tp")) throw Fail{std::string(n) + " needs --dp N or --tp t"};
    return;
  }
  o.sharding = true;
  ShardingRequest& q = o.dp;
  Layout& l = q.layout;
  constexpr u64 kMaxDp = 1u << 20;
  if (v.dp < 1 || v.dp > kMaxDp) throw Fail{"--dp expects an integer in [1, 1048576]"};
  l.dp = v.dp;
  if (has("--zero") && has("--fsdp")) throw Fail{"--zero and --fsdp both pick the strategy; give one"};
  q.chosen_by = "default (--zero 0)";
  if (has("--zero")) {
    parse_zero_stage(v.zero, &l.strategy);
    q.chosen_by = "--zero " + v.zero;
  }
  if (has("--fsdp")) {
    parse_fsdp(v.fsdp, &l.strategy);
    q.chosen_by = "--fsdp " + v.fsdp;
  }
  if (has("--ranks-per-node")) {
    if (v.ranks_per_node < 1 || v.ranks_per_node > kMaxDp)
      throw Fail{"--ranks-per-node expects an integer in [1, 1048576]"};
    l.ranks_per_node = v.ranks_per_node;
    q.nodes_given = true;
  } else if (o.preset_given) {
    l.ranks_per_node = 8;  // the chapter's 8-GPU nodes
    q.nodes_given = true;
  }
  if (v.accum < 1 || v.accum > 1000000) throw Fail{"--accum expects an integer in [1, 1000000]"};
  l.accum = v.accum, l.exact = v.exact;
  for (const auto& [name, value] : {std::pair{"--intra-gbps", v.intra_gbps}, std::pair{"--inter-gbps", v.inter_gbps}})
    if (!(value > 0 && value < 1e12)) throw Fail{std::string(name) + " expects a positive number of GB/s"};
  q.intra_gbps = v.intra_gbps;
  q.inter_gbps = v.inter_gbps;
  if (l.strategy == Strategy::hybrid && !l.ranks_per_node) throw Fail{"--fsdp hybrid needs --ranks-per-node K"};
  if (const std::string why = layout_error(l); !why.empty()) throw Fail{why};
  // Keep every comm byte count exact in 64 bits: ZeRO-3/hybrid send up to (3A + 2)·Ψ_pad·8 bytes.
  if ((o.psi() + (long double)l.dp) * 8.0L * (3.0L * l.accum + 2) > 1e18L)
    throw Fail{"sizes too large for exact 64-bit byte counts"};
}

// --tp and --sequence-parallel (claims C17–C19, C23).
void tp_request(const Flags& f, const PlanFlags& v, PlanRequest& o) {
  if (!f.given("--tp")) {
    if (v.sequence_parallel) throw Fail{"--sequence-parallel needs --tp t (t ≥ 2)"};
    return;
  }
  if (v.tp < 1 || v.tp > 1048576) throw Fail{"--tp expects an integer in [1, 1048576]"};
  if (o.act.heads % v.tp != 0)
    throw Fail{"--tp " + std::to_string(v.tp) + " does not divide the " + std::to_string(o.act.heads) +
               " heads (every rank holds whole heads)"};
  if (v.sequence_parallel && v.tp < 2) throw Fail{"--sequence-parallel needs --tp 2 or more"};
  if (v.sequence_parallel && o.act.seq % v.tp != 0)
    throw Fail{"--sequence-parallel splits --seq " + std::to_string(o.act.seq) + " over --tp " + std::to_string(v.tp) +
               ": it must be divisible"};
  for (const auto& [name, value] : {std::pair{"--intra-gbps", v.intra_gbps}, std::pair{"--inter-gbps", v.inter_gbps}})
    if (!(value > 0 && value < 1e12)) throw Fail{std::string(name) + " expects a positive number of GB/s"};
  o.tp_given = true;
  o.tp = TpRequest{v.tp, v.sequence_parallel, v.intra_gbps, v.inter_gbps};
}

// --pp and its flags (claims C20–C22, C26).
void pp_request(const Flags& f, const PlanFlags& v, PlanRequest& o) {
  if (!f.given("--pp")) {
    for (const char* n : {"--micro-batches", "--virtual-stages"})
      if (f.given(n)) throw Fail{std::string(n) + " needs --pp p"};
    return;
  }
  if (v.pp < 1 || v.pp > 64) throw Fail{"--pp expects an integer in [1, 64]"};
  if (v.pp > 1 && o.sharding && o.dp.layout.strategy == Strategy::hybrid)  // the trainer's rule
    throw Fail{
        "--fsdp hybrid shards inside a node, and pipeline stages usually span nodes: use --zero 1, 2 or 3 with --pp"};
  if (v.micro_batches < 1 || v.micro_batches > 4096) throw Fail{"--micro-batches expects an integer in [1, 4096]"};
  if (v.virtual_stages < 2 || v.virtual_stages > 8) throw Fail{"--virtual-stages expects an integer in [2, 8]"};
  // The trainer's rules: every stage holds whole layers; an interleaved layout asked for (--virtual-stages)
  // needs layers divisible by p·v and m a multiple of p (by default its column shows "-" where it can't run).
  const int layers = static_cast<int>(std::min<u64>(o.act.layers, std::numeric_limits<int>::max()));
  if (std::string why = pipeline_problem(layers, v.pp, 1, ScheduleKind::one_f_one_b, {}); !why.empty()) throw Fail{why};
  if (f.given("--virtual-stages")) {
    if (std::string why = pipeline_problem(layers, v.pp, v.virtual_stages, ScheduleKind::interleaved, {}); !why.empty())
      throw Fail{why};
    if (std::string why = schedule_shape_problem(ScheduleKind::interleaved, v.pp, v.micro_batches, v.virtual_stages);
        !why.empty())
      throw Fail{why};
  }
  o.pp_given = true;
  o.pp = PpRequest{v.pp,   v.micro_batches,          v.virtual_stages,
                   layers, o.tp_given ? o.tp.tp : 1, o.sharding ? o.dp.layout.dp : 1};
}

// --cp and --cp-split (claim C24): the trainer's rules — whole chunks of the sequence, ring attention on the
// flash kernel (naive attention is refused, as by train; without --attention, flash is assumed).
void cp_request(const Flags& f, const PlanFlags& v, PlanRequest& o) {
  if (!f.given("--cp")) {
    if (f.given("--cp-split")) throw Fail{"--cp-split needs --cp c"};
    return;
  }
  if (v.cp < 1 || v.cp > 1048576) throw Fail{"--cp expects an integer in [1, 1048576]"};
  const bool zigzag = v.cp_split == ContextSplit::zigzag;
  const u64 chunks = zigzag ? 2 * v.cp : v.cp, s = o.act.seq;
  if (s % chunks != 0)
    throw Fail{"--cp " + std::to_string(v.cp) + " " + (zigzag ? "zigzag cuts" : "contiguous cuts") + " --seq " +
               std::to_string(s) + " into " + std::to_string(chunks) + " equal chunks: it must be divisible"};
  const bool exact = o.sharding && o.dp.layout.exact;  // no ring: whole samples per cp rank inside the regions
  const bool sp = o.tp_given && o.tp.sequence_parallel;
  if (const std::string why = exact ? exact_cp_problem(v.cp, o.act.micro_batch, sp) : ""; !why.empty()) throw Fail{why};
  if (!exact && f.given("--attention") && o.attention == AttentionKernel::naive)
    throw Fail{
        "--cp runs ring attention: flash attention's online softmax over key blocks that arrive from the other"
        " cp ranks; the naive kernel needs each query's whole row of s scores on one rank — use --attention flash"};
  const u64 t = o.tp_given ? o.tp.tp : 1;
  if (sp && (s / v.cp) % t != 0)
    throw Fail{"--sequence-parallel splits each cp rank's " + std::to_string(s / v.cp) + " tokens over --tp " +
               std::to_string(t) + ": it must be divisible"};
  u64 blocks = o.pp_given ? 0 : o.act.layers;  // with --pp: the largest stage's
  for (int stage = 0; o.pp_given && stage < o.pp.pp; ++stage)
    blocks = std::max<u64>(blocks, u64(partition_layers(o.pp.layers, o.pp.pp, 1, {}).blocks_of(stage)));
  o.cp_given = true;
  const u64 accum = o.pp_given ? u64(o.pp.micro_batches) : o.sharding ? o.dp.layout.accum : 1;
  o.cp = CpRequest{v.cp, v.cp_split, accum, t, blocks, !f.given("--attention"), exact};
  if (!exact) o.attention = AttentionKernel::flash;
}

// --moe-* (the model's experts) and --ep (claim C25): the trainer's rules — 1 ≤ k ≤ E, E divisible by e.
void moe_request(const Flags& f, const PlanFlags& v, PlanRequest& o) {
  if (std::string why = moe_flags_problem(f, v.moe, o.preset_given, "--preset 7b --ep e: Mixtral-like", o.gpt.layers);
      !why.empty())
    throw Fail{why};
  if (f.given("--moe-experts")) {
    o.gpt.moe = moe_dims(f, v.moe);
    o.dp.layout.exact_scalars = 3;  // --exact: the loss and the router's two losses, each an order-free sum
  }
  if (!f.given("--ep")) return;
  if (v.ep < 1 || v.ep > 4096) throw Fail{"--ep expects an integer in [1, 4096]"};
  if (o.preset_given && o.preset.name != "7b")
    throw Fail{"--preset " + o.preset.name + " has no MoE example; give the dims and --moe-experts E"};
  EpRequest& q = o.ep;
  q.mixtral = o.preset_given;
  q.gpt = q.mixtral ? mixtral_like(o.act.seq) : o.gpt;
  if (!q.gpt.moe.on()) throw Fail{"--ep " + std::to_string(v.ep) + " spreads experts over ranks: add --moe-experts E"};
  if (q.gpt.moe.experts % v.ep != 0)
    throw Fail{"--moe-experts " + std::to_string(q.gpt.moe.experts) + " is not divisible by --ep " +
               std::to_string(v.ep) + " (every ep rank holds E/e whole experts)"};
  q.ep = v.ep;
  q.seq = o.act.seq;
  q.micro_batch = o.act.micro_batch;
  q.accum = o.pp_given ? u64(o.pp.micro_batches) : o.sharding ? o.dp.layout.accum : 1;
  q.dp = o.sharding ? o.dp.layout.dp : 1;
  q.strategy = o.sharding ? o.dp.layout.strategy : Strategy::dp;
  q.exact = o.sharding && o.dp.layout.exact;
  if (q.strategy == Strategy::hybrid) throw Fail{"--ep with --fsdp hybrid: not supported (a run refuses it too)"};
  o.ep_given = true;
}

PlanRequest request(const Flags& f, const PlanFlags& v) {
  auto has = [&](const char* n) { return f.given(n); };
  PlanRequest o;
  if (has("--preset")) {
    o.preset_given = true;
    find_preset(v.preset, &o.preset);
    for (const char* n : {"--layers", "--hidden", "--heads", "--vocab", "--params"})
      if (has(n)) throw Fail{std::string("--preset fixes the model; drop ") + n};
    o.act = o.preset.act;
  }
  for (const auto& [name, value] :
       {std::pair{"--layers", v.layers}, std::pair{"--hidden", v.hidden}, std::pair{"--heads", v.heads},
        std::pair{"--seq", v.seq}, std::pair{"--vocab", v.vocab}, std::pair{"--micro-batch", v.micro_batch}})
    if (value < 1) throw Fail{std::string(name) + " must be a positive integer"};
  if (has("--params") && v.params < 1) throw Fail{"--params must be a positive integer"};
  o.gpt = {v.vocab, v.seq, v.hidden, v.layers};
  if (has("--heads")) o.act.heads = v.heads;
  if (has("--seq") || !o.preset_given) o.act.seq = v.seq;
  if (has("--micro-batch") || !o.preset_given) o.act.micro_batch = v.micro_batch;
  if (!o.preset_given) o.act.heads = v.heads;
  o.params = v.params;
  parse_optimizer(v.optimizer, &o.recipe.optimizer);
  parse_mixed(v.mixed, &o.recipe.mixed);
  parse_dtype(v.dtype, &o.recipe.dtype);
  parse_grad_accum(v.grad_accum, &o.recipe.grad_accum);
  parse_master(v.master, &o.recipe.master);
  parse_attention_kernel(v.attention, &o.attention);
  parse_recompute(v.recompute, &o.recompute);
  if (!(v.dropout >= 0 && v.dropout < 1)) throw Fail{"--dropout must be in [0, 1)"};
  o.dropout = v.dropout;
  if (has("--dtype") && o.recipe.dtype == Dtype::f64) {  // bf16 mixed precision computes in f32
    if (has("--mixed") && o.recipe.mixed == Mixed::bf16) throw Fail{"--mixed bf16 computes in f32; drop --dtype f64"};
    o.recipe.mixed = Mixed::none;
  }
  if (!(v.momentum >= 0.0 && v.momentum < 1.0)) throw Fail{"--momentum expects a number in [0, 1)"};
  o.recipe.momentum = v.momentum;
  if (!o.preset_given) {
    o.gpt.seq = o.act.seq;  // positions = the sequence the activations use
    o.act.hidden = o.gpt.hidden;
    o.act.layers = o.gpt.layers;
    if (o.act.hidden % o.act.heads != 0)
      throw Fail{"--heads " + std::to_string(o.act.heads) + " does not divide --hidden " +
                 std::to_string(o.act.hidden)};
  }
  // Keep every byte count exact in 64 bits.
  const ActivationDims& d = o.act;
  const long double s = d.seq, big = 1e18L;
  const long double act = d.layers * (34.0L * s * d.micro_batch * d.hidden + 5.0L * d.heads * s * s * d.micro_batch);
  const long double gpt = (long double)o.gpt.hidden * o.gpt.hidden * (12.0L * o.gpt.layers + 4) +
                          (long double)o.gpt.hidden * (o.gpt.vocab * 2.0L + s);
  if (act > big || 32.0L * std::max<long double>(gpt, o.params) > big)
    throw Fail{"sizes too large for exact 64-bit byte counts"};
  sharding_request(f, v, o);
  tp_request(f, v, o);
  pp_request(f, v, o);
  cp_request(f, v, o);
  moe_request(f, v, o);
  return o;
}

}  // namespace

int plan_run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  for (const auto& [flag, run] : {std::pair{"--search", &plan_search_run}, std::pair{"--predict", &plan_predict_run}})
    if (std::find(args.begin(), args.end(), flag) != args.end()) return run(args, out, err);
  PlanFlags v;
  Flags flags("shardlab plan",
              "The chapter's memory and communication formulas (1 GB = 1e9 bytes) for a preset, the trainer's GPT dims "
              "or a parameter count; --ledger checks a run against them.");
  define(flags, v);
  try {
    if (printed_help<Fail>(flags, args, out)) return 0;
    if (flags.given("--ledger")) {
      for (const char* n : {"--preset",
                            "--layers",
                            "--hidden",
                            "--heads",
                            "--seq",
                            "--vocab",
                            "--params",
                            "--micro-batch",
                            "--optimizer",
                            "--momentum",
                            "--mixed",
                            "--dtype",
                            "--grad-accum-dtype",
                            "--master",
                            "--attention",
                            "--recompute",
                            "--dropout",
                            "--dp",
                            "--zero",
                            "--fsdp",
                            "--ranks-per-node",
                            "--accum",
                            "--intra-gbps",
                            "--inter-gbps",
                            "--tp",
                            "--sequence-parallel",
                            "--pp",
                            "--micro-batches",
                            "--virtual-stages",
                            "--cp",
                            "--cp-split",
                            "--moe-experts",
                            "--moe-top-k",
                            "--moe-every",
                            "--moe-ffn",
                            "--ep"})
        if (flags.given(n)) throw Fail{std::string("--ledger takes the recipe and params from the ledger; drop ") + n};
      return run_ledger(v.ledger, out, err);
    }
    print_plan(out, request(flags, v));
    return 0;
  } catch (const Fail& f) {
    err << "shardlab plan: error: " << shorten_values(f.message) << " (shardlab plan --help lists the flags)\n";
    return 2;
  }
}

}  // namespace plan
}  // namespace shardlab
