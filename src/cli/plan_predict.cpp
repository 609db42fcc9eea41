// `shardlab plan --predict --np N [layout flags]`: one layout of the trainer's GPT, given in the trainer's own flags,
// before it runs — every rank's model-state bytes, activation peak and bytes sent per step on each axis (the formulas
// `plan --ledger` checks a run against: plan/rank_prediction.h) and the step time at a machine's rates (--rates FILE,
// written by `plan --calibrate`; else the chapter's A100 defaults). --json FILE writes the same as JSON, for scripts.
// With experts over ep, what the router decides (the all-to-alls, the experts' rows in the activation peak) is printed
// with `~`: at an even load, an estimate ("even_load" in the JSON); the dp bytes and ZeRO's ep all-reduce are exact.
// Exit 0, 2 on bad input (a layout the trainer would refuse, an unreadable rates file).
#include <fstream>
#include <iomanip>
#include <ostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "io/owned_files.h"
#include "plan/rank_prediction.h"
#include "plan/rates_file.h"
#include "train/train_config.h"

namespace shardlab::plan {

namespace {
using u64 = std::uint64_t;

constexpr const char* kPredictJsonBy = "plan --predict --json";

struct PredictFail {
  std::string message;
};

struct PredictFlags {
  bool predict = false;
  std::string dtype = "f32", mixed = "none", recompute = "none", attention = "naive", rates, json;
  u64 np = 0, zero = 0;
  PredictSpec s;
};

// The trainer's configuration of spec s (AdamW, pure f32 or f64 or mixed bf16, 1F1B with pp), and its verdict: the
// rules of `shardlab train` (train/train_config.h's validate_train_config and validate_world), "" when it would start
// it.
std::string trainer_problem(const PredictSpec& s) {
  TrainConfig c;
  c.model.layers = int(s.layers), c.model.hidden = int(s.hidden), c.model.heads = int(s.heads);
  c.model.seq = int(s.seq), c.model.vocab = int(s.vocab);
  c.model.moe.experts = int(s.experts), c.model.moe.top_k = int(s.top_k);
  c.micro_batch = int(s.micro_batch), c.global_batch = int(s.global_batch);
  c.recipe.dtype = s.f64 ? Dtype::f64 : Dtype::f32;
  c.recipe.mixed = s.bf16 ? Mixed::bf16 : Mixed::none;
  c.recompute = s.recompute, c.attention = s.attention;
  ParallelLayout& l = c.layout;
  l.dp = int(s.dp), l.tp = int(s.tp), l.pp = int(s.pp), l.cp = int(s.cp), l.ep = int(s.ep), l.zero = s.zero;
  l.bucket_mb = s.bucket_mb, l.sequence_parallel = s.sequence_parallel, l.exact = s.exact;
  l.schedule = ScheduleKind::one_f_one_b;
  if (std::string why = validate_train_config(c); !why.empty()) return why;
  return validate_world(c, int(s.world));
}

void define(Flags& f, PredictFlags& v) {
  f.flag("--predict", v.predict, "predict one layout of the trainer's GPT, rank by rank");
  f.add("--np", v.np, "ranks of the run (mpirun -np N)");
  f.group("Model and batch (the trainer's flags)");
  f.add("--layers", v.s.layers, "transformer blocks L");
  f.add("--hidden", v.s.hidden, "hidden size C");
  f.add("--heads", v.s.heads, "attention heads");
  f.add("--seq", v.s.seq, "sequence length");
  f.add("--vocab", v.s.vocab, "vocabulary size");
  f.choice("--dtype", v.dtype, {"f32", "f64"}, "compute type (AdamW)");
  f.choice("--mixed", v.mixed, {"none", "bf16"}, "mixed precision: bf16 weights and gradients, an fp32 master");
  f.add("--global-batch", v.s.global_batch, "samples per optimizer step");
  f.add("--micro-batch", v.s.micro_batch, "samples per forward/backward");
  f.choice("--recompute", v.recompute, {"none", "selective", "full"}, "recompute in backward");
  f.choice("--attention", v.attention, {"naive", "flash"}, "attention kernel");
  f.add("--moe-experts", v.s.experts, "experts E in every block's MLP (0: dense)");
  f.add("--moe-top-k", v.s.top_k, "experts per token k");
  f.group("Layout (the trainer's flags)");
  f.add("--dp", v.s.dp, "data-parallel ranks (0: what the other axes leave)");
  f.add("--tp", v.s.tp, "tensor-parallel ranks");
  f.add("--pp", v.s.pp, "pipeline stages (1F1B)");
  f.add("--cp", v.s.cp, "context-parallel ranks");
  f.add("--ep", v.s.ep, "expert-parallel ranks");
  f.add("--zero", v.zero, "ZeRO stage 0 | 1 | 2 | 3");
  f.add("--bucket-mb", v.s.bucket_mb, "DP gradient bucket size in MB");
  f.flag("--sequence-parallel", v.s.sequence_parallel, "tp's regions split along the sequence (Korthikanti's SP)");
  f.flag("--exact", v.s.exact,
         "the exact mode: its 32-byte order-free sums (bytes and memory exact; its slower step is not modelled)");
  f.group("Machine and output");
  f.add("--rates", v.rates, "FILE: rates measured by `plan --calibrate` (else the chapter's A100 defaults)", "FILE");
  f.add("--json", v.json, "FILE: the prediction as JSON", "FILE");
}

nlohmann::json to_json(const PredictFlags& v, const StepRates& rates, const LayoutPrediction& p) {
  nlohmann::json j;
  j["layout"] = nlohmann::json::parse(describe_layout(v.s))["layout"];
  j["world"] = p.world;
  j["accum"] = p.accum;
  j["rates"] = {{"gpu_flops", rates.gpu_flops},
                {"gpu_flops_flash", rates.flops_for(AttentionKernel::flash)},
                {"bytes_per_s", rates.intra_bytes_per_s},
                {"latency_s", rates.latency_s},
                {"update_s_per_param", rates.update_s_per_param},
                {"from", v.rates.empty() ? "the chapter's defaults" : v.rates}};
  j["step_seconds"] = p.step_seconds;
  j["ranks"] = nlohmann::json::array();
  for (const RankPrediction& r : p.ranks) {
    nlohmann::json k = {{"rank", r.rank},
                        {"coords", {{"dp", r.dp}, {"tp", r.tp}, {"pp", r.pp}, {"cp", r.cp}, {"ep", r.ep}}},
                        {"params", r.params},
                        {"updated_params", r.updated_params},
                        {"model_states", r.model_states},
                        {"bytes_per_step", {{"tp", r.tp_bytes}, {"pp", r.pp_bytes}, {"cp", r.cp_bytes}}},
                        {"flops", r.flops},
                        {"seconds",
                         {{"compute", r.compute},
                          {"update", r.update_s},
                          {"dp", r.dp_s},
                          {"tp", r.tp_s},
                          {"pp", r.pp_s},
                          {"cp", r.cp_s},
                          {"ep", r.ep_s},
                          {"bubble", r.bubble},
                          {"step", r.step()}}}};
    k["activation_peak"] = r.activations_known ? nlohmann::json(r.activation_peak) : nlohmann::json(nullptr);
    k["bytes_per_step"]["dp"] = r.dp_known ? nlohmann::json(r.dp_bytes) : nlohmann::json(nullptr);
    k["bytes_per_step"]["ep_grad"] = r.ep_grad_bytes;
    k["even_load"] = nullptr;  // the routing's numbers at an even load: estimates, never checked
    if (r.ep_even)
      k["even_load"] = {
          {"ep_all_to_all", r.ep_all_to_all_bytes},
          {"activation_peak", r.activations_even ? nlohmann::json(r.activation_peak) : nlohmann::json(nullptr)}};
    j["ranks"].push_back(k);
  }
  return j;
}

void print(std::ostream& out, const PredictFlags& v, const StepRates& rates, const LayoutPrediction& p) {
  out << "prediction for " << p.world << " ranks, " << p.accum << " micro-batch(es) of " << v.s.micro_batch
      << " per step; rates " << (v.rates.empty() ? "the chapter's defaults" : "from " + v.rates) << ": "
      << rates.gpu_flops / 1e9 << " GFLOP/s per rank (flash attention " << rates.flops_for(AttentionKernel::flash) / 1e9
      << "), β " << rates.intra_bytes_per_s / 1e9 << " GB/s, α " << rates.latency_s * 1e6 << " µs, update "
      << rates.update_s_per_param * 1e9 << " ns per parameter\n";
  out << "rank  dp tp pp cp ep   model states B   activation peak B   bytes/step dp / tp / pp / cp / ep        "
         "step ms (compute + update + comm + bubble)\n";
  bool even = false;
  for (const RankPrediction& r : p.ranks) {
    std::ostringstream bytes;
    bytes << (r.dp_known ? std::to_string(r.dp_bytes) : "?") << " / " << r.tp_bytes << " / " << r.pp_bytes << " / "
          << r.cp_bytes << " / " << (r.ep_even ? "~" : "") << r.ep_grad_bytes + r.ep_all_to_all_bytes;
    even |= r.ep_even;
    const std::string act = r.activations_known  ? std::to_string(r.activation_peak)
                            : r.activations_even ? "~" + std::to_string(r.activation_peak)
                                                 : "routing";
    out << std::setw(4) << r.rank << "  " << r.dp << "  " << r.tp << "  " << r.pp << "  " << r.cp << "  " << r.ep
        << std::setw(17) << r.model_states << std::setw(20) << act << "   " << std::left << std::setw(37) << bytes.str()
        << std::right << std::fixed << std::setprecision(2) << std::setw(8) << r.step() * 1e3 << " (" << r.compute * 1e3
        << " + " << r.update_s * 1e3 << " + " << (r.dp_s + r.tp_s + r.pp_s + r.cp_s + r.ep_s) * 1e3 << " + "
        << r.bubble * 1e3 << ")\n"
        << std::defaultfloat;
  }
  if (even)
    out << "~ at an even load: every rank's s·b·k expert slots spread evenly over the experts (1/e of them stay home). "
           "A dropless router sends each token where it chooses, so the real all-to-alls and expert rows are uneven "
           "and change every step: an estimate, not a check (ep's gradient all-reduce and the dp bytes are exact)\n";
  out << "predicted step: " << p.step_seconds * 1e3 << " ms (the slowest rank)\n";
}
}  // namespace

int plan_predict_run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  PredictFlags v;
  Flags flags("shardlab plan --predict",
              "One layout of the trainer's GPT before it runs: every rank's model states, activation peak and bytes "
              "per axis (the formulas plan --ledger checks runs against) and the step time at measured rates.");
  define(flags, v);
  try {
    if (printed_help<PredictFail>(flags, args, out)) return 0;
    if (!flags.given("--np")) throw PredictFail{"--predict needs --np N (the run's ranks)"};
    if (v.np < 1 || v.np > 4096) throw PredictFail{"--np expects an integer in [1, 4096]"};
    if (v.zero > 3) throw PredictFail{"--zero expects 0, 1, 2 or 3"};
    for (const auto& [name, x] :
         {std::pair{"--layers", v.s.layers}, std::pair{"--hidden", v.s.hidden}, std::pair{"--heads", v.s.heads},
          std::pair{"--seq", v.s.seq}, std::pair{"--vocab", v.s.vocab}, std::pair{"--global-batch", v.s.global_batch},
          std::pair{"--micro-batch", v.s.micro_batch}, std::pair{"--tp", v.s.tp}, std::pair{"--pp", v.s.pp},
          std::pair{"--cp", v.s.cp}, std::pair{"--ep", v.s.ep}})
      if (x < 1 || x > (u64(1) << 20)) throw PredictFail{std::string(name) + " expects an integer in [1, 1048576]"};
    v.s.world = v.np;
    v.s.zero = int(v.zero);
    v.s.f64 = v.dtype == "f64";
    v.s.bf16 = v.mixed == "bf16";
    parse_recompute(v.recompute, &v.s.recompute);
    parse_attention_kernel(v.attention, &v.s.attention);
    // A layout is valid when the trainer would start it: its own rules, its own sentences.
    if (std::string why = trainer_problem(v.s); !why.empty())
      throw PredictFail{"the trainer would refuse this: " + why};
    if (flags.given("--json"))
      if (std::string why = output_file_problem(v.json, "--json", kPredictJsonBy, {v.rates}); !why.empty())
        throw PredictFail{why};
    StepRates rates;
    LayoutPrediction p;
    try {
      if (!v.rates.empty()) rates = read_rates_file(v.rates);
      p = predict_layout(v.s, rates);
    } catch (const std::exception& e) {  // the rates file's one line, or the layout's
      throw PredictFail{e.what()};
    }
    if (flags.given("--json")) write_owned_file(v.json, to_json(v, rates, p).dump(1) + "\n", false, kPredictJsonBy);
    print(out, v, rates, p);
    return 0;
  } catch (const PredictFail& f) {
    err << "shardlab plan --predict: error: " << f.message << " (shardlab plan --predict --help lists the flags)\n";
    return 2;
  }
}

}  // namespace shardlab::plan
