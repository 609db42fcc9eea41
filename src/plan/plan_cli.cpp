// plan/plan_cli.cpp — `shardlab plan`: flag parsing, the aligned tables of model states (C1, C3) and
// activations (C4, C5, C6), the data-parallel section (plan/sharding_report.h) when --dp is given, and
// --ledger (plan/ledger_check.h, plan/ledger_report.h). Leaves out: TP/PP layouts (see plan_cli.h).
#include "plan/plan_cli.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

#include "plan/format.h"
#include "plan/ledger_check.h"
#include "plan/ledger_report.h"
#include "plan/sharding_report.h"

namespace shardlab::plan {

namespace {

using u64 = std::uint64_t;

constexpr long double kGpuBytes = 80e9L;   // claim C1: "80 GB GPU"

const char* const kUsage =
    "usage: shardlab plan [--preset 7b|70b | --layers L --hidden C --heads A --seq S --vocab V |\n"
    "                      --params N] [--micro-batch B] [--optimizer adamw|sgd|adam8bit]\n"
    "                      [--momentum M] [--mixed none|bf16] [--dtype f32|f64]\n"
    "                      [--grad-accum-dtype bf16|fp32] [--master fp32|none]\n"
    "                      [--attention naive|flash]\n"
    "                      [--dp N [--zero 0|1|2|3 | --fsdp full|grad_op|no_shard|hybrid]\n"
    "                       [--ranks-per-node K] [--accum A] [--intra-gbps X] [--inter-gbps Y]]\n"
    "       shardlab plan --ledger RUN/ledger.json   (exit 0 iff measured == formula, every rank)\n"
    "Defaults: the trainer's GPT (L 4, C 128, A 4, S 64, V 256), micro-batch 1, and the chapter's\n"
    "recipe (adamw, mixed bf16, bf16 grads, fp32 master); --dtype f64 alone means pure f64. With\n"
    "--preset only --seq, --micro-batch and recipe flags may be added. 1 GB = 1e9 bytes.\n"
    "--dp adds per-rank model states and per-step ring bytes for DP / ZeRO / FSDP: --zero 0 (default)\n"
    "= --fsdp no_shard, 2 = grad_op, 3 = full; hybrid shards inside nodes of --ranks-per-node K\n"
    "(default 8 with --preset; without K every rank is on one node); --accum A micro-batches per\n"
    "step (default 1); link speeds --intra-gbps 300 and --inter-gbps 25 (GB/s, the chapter's).\n";

// ---- flags -------------------------------------------------------------------------------------
struct Options {
    std::map<std::string, std::string> given;   // flag name (without --) → value
    bool help = false;
    Preset preset;
    GptDims gpt;
    ActivationDims act;
    u64 params = 0;                               // --params, 0 if absent
    Recipe recipe;
    Attention attention = Attention::naive;
    bool sharding = false;                        // --dp given: print the data-parallel section
    ShardingRequest dp;
};

const char* const kValueFlags[] = {"preset", "layers", "hidden", "heads", "seq", "vocab", "params",
                                   "micro-batch", "optimizer", "momentum", "mixed", "dtype",
                                   "grad-accum-dtype", "master", "attention", "ledger", "dp", "zero",
                                   "fsdp", "ranks-per-node", "accum", "intra-gbps", "inter-gbps"};

// Positive integer; with sci also "7e9" / "1.5e9" when the value is an exact integer.
bool parse_count(const std::string& s, u64* out, bool sci) {
    if (s.empty()) return false;
    if (s.find_first_not_of("0123456789") == std::string::npos) {
        if (s.size() > 18) return false;
        *out = std::stoull(s);
        return *out > 0;
    }
    if (!sci) return false;
    char* end = nullptr;
    const long double x = std::strtold(s.c_str(), &end);
    if (*end != '\0' || !(x >= 1) || x > 1e18L || x != std::floor(x)) return false;
    *out = static_cast<u64>(x);
    return true;
}

int fail(std::ostream& err, const std::string& msg) {
    err << "plan: " << msg << " (see: shardlab plan --help)\n";
    return 2;
}

u64 plan_psi(const Options& o) {
    return o.given.count("preset") ? o.preset.psi : (o.params ? o.params : gpt_param_count(o.gpt));
}

// --dp and the flags that only mean something with it (claims C7–C16).
int parse_sharding(Options* o, std::ostream& err) {
    auto has = [&](const char* n) { return o->given.count(n) > 0; };
    auto bad = [&](const std::string& name, const std::string& expected) {
        return fail(err, "bad value '" + o->given[name] + "' for --" + name + ", expected " + expected);
    };
    if (!has("dp")) {
        for (const char* n : {"zero", "fsdp", "ranks-per-node", "accum", "intra-gbps", "inter-gbps"})
            if (has(n)) return fail(err, std::string("--") + n + " needs --dp N");
        return 0;
    }
    o->sharding = true;
    ShardingRequest& q = o->dp;
    Layout& l = q.layout;
    constexpr u64 kMaxDp = 1u << 20;
    if (!parse_count(o->given["dp"], &l.dp, false) || l.dp > kMaxDp) return bad("dp", "an integer in [1, 1048576]");
    if (has("zero") && has("fsdp")) return fail(err, "--zero and --fsdp both pick the strategy; give one");
    q.chosen_by = "default (--zero 0)";
    if (has("zero")) {
        if (!parse_zero_stage(o->given["zero"], &l.strategy)) return bad("zero", "0, 1, 2 or 3");
        q.chosen_by = "--zero " + o->given["zero"];
    }
    if (has("fsdp")) {
        if (!parse_fsdp(o->given["fsdp"], &l.strategy)) return bad("fsdp", "full, grad_op, no_shard or hybrid");
        q.chosen_by = "--fsdp " + o->given["fsdp"];
    }
    if (has("ranks-per-node")) {
        if (!parse_count(o->given["ranks-per-node"], &l.ranks_per_node, false) || l.ranks_per_node > kMaxDp)
            return bad("ranks-per-node", "an integer in [1, 1048576]");
        q.nodes_given = true;
    } else if (has("preset")) {
        l.ranks_per_node = 8;   // the chapter's 8-GPU nodes
        q.nodes_given = true;
    }
    if (has("accum") && (!parse_count(o->given["accum"], &l.accum, false) || l.accum > 1000000))
        return bad("accum", "an integer in [1, 1000000]");
    for (const auto& [name, dst] : {std::pair{"intra-gbps", &q.intra_gbps}, std::pair{"inter-gbps", &q.inter_gbps}}) {
        if (!has(name)) continue;
        char* end = nullptr;
        const std::string& v = o->given[name];
        *dst = std::strtod(v.c_str(), &end);
        if (v.empty() || *end != '\0' || !(*dst > 0 && *dst < 1e12)) return bad(name, "a positive number of GB/s");
    }
    if (l.strategy == Strategy::hybrid && !l.ranks_per_node)
        return fail(err, "--fsdp hybrid needs --ranks-per-node K");
    if (const std::string why = layout_error(l); !why.empty()) return fail(err, why);
    // Keep every comm byte count exact in 64 bits: ZeRO-3/hybrid send up to (3A + 2)·Ψ_pad·8 bytes.
    if ((plan_psi(*o) + (long double)l.dp) * 8.0L * (3.0L * l.accum + 2) > 1e18L)
        return fail(err, "sizes too large for exact 64-bit byte counts");
    return 0;
}

int parse_options(const std::vector<std::string>& args, Options* o, std::ostream& err) {
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "--help" || a == "-h") { o->help = true; continue; }
        if (a.rfind("--", 0) != 0) return fail(err, "unexpected argument '" + a + "'");
        const size_t eq = a.find('=');
        const std::string name = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
        if (std::find(std::begin(kValueFlags), std::end(kValueFlags), name) == std::end(kValueFlags))
            return fail(err, "unknown flag --" + name);
        std::string value;
        if (eq != std::string::npos) value = a.substr(eq + 1);
        else if (i + 1 < args.size()) value = args[++i];
        else return fail(err, "--" + name + " needs a value");
        if (o->given.count(name)) return fail(err, "--" + name + " given twice");
        o->given[name] = value;
    }
    auto bad = [&](const std::string& name, const std::string& expected) {
        return fail(err, "bad value '" + o->given[name] + "' for --" + name + ", expected " + expected);
    };
    auto has = [&](const char* n) { return o->given.count(n) > 0; };
    auto word = [&](const char* n, auto parse, auto* dst, const char* expected) {
        return !has(n) || parse(o->given[n], dst) ? 0 : bad(n, expected);
    };
    auto count = [&](const char* n, u64* dst, bool sci) {
        return !has(n) || parse_count(o->given[n], dst, sci) ? 0 : bad(n, "a positive integer");
    };
    if (has("ledger")) {
        for (const auto& kv : o->given)
            if (kv.first != "ledger")
                return fail(err, "--ledger takes the recipe and params from the ledger; drop --" + kv.first);
        return 0;
    }
    if (has("preset")) {
        if (!find_preset(o->given["preset"], &o->preset)) return bad("preset", "7b or 70b");
        for (const char* n : {"layers", "hidden", "heads", "vocab", "params"})
            if (has(n)) return fail(err, std::string("--preset fixes the model; drop --") + n);
        o->act = o->preset.act;
    }
    int rc = 0;
    if ((rc = count("layers", &o->gpt.layers, false)) || (rc = count("hidden", &o->gpt.hidden, false)) ||
        (rc = count("heads", &o->act.heads, false)) || (rc = count("seq", &o->act.seq, false)) ||
        (rc = count("vocab", &o->gpt.vocab, false)) || (rc = count("params", &o->params, true)) ||
        (rc = count("micro-batch", &o->act.micro_batch, false)) ||
        (rc = word("optimizer", parse_optimizer, &o->recipe.optimizer, "adamw, sgd or adam8bit")) ||
        (rc = word("mixed", parse_mixed, &o->recipe.mixed, "none or bf16")) ||
        (rc = word("dtype", parse_dtype, &o->recipe.dtype, "f32 or f64")) ||
        (rc = word("grad-accum-dtype", parse_grad_accum, &o->recipe.grad_accum, "bf16 or fp32")) ||
        (rc = word("master", parse_master, &o->recipe.master, "fp32 or none")) ||
        (rc = word("attention", parse_attention, &o->attention, "naive or flash")))
        return rc;
    if (has("dtype") && o->recipe.dtype == Dtype::f64) {   // bf16 mixed precision computes in f32
        if (has("mixed") && o->recipe.mixed == Mixed::bf16)
            return fail(err, "--mixed bf16 computes in f32; drop --dtype f64");
        o->recipe.mixed = Mixed::none;
    }
    if (has("momentum")) {
        char* end = nullptr;
        const double m = std::strtod(o->given["momentum"].c_str(), &end);
        if (*end != '\0' || o->given["momentum"].empty() || !(m >= 0.0 && m < 1.0))
            return bad("momentum", "a number in [0, 1)");
        o->recipe.momentum = m;
    }
    if (!has("preset")) {
        o->gpt.seq = o->act.seq;            // positions = the sequence the activations use
        o->act.hidden = o->gpt.hidden;
        o->act.layers = o->gpt.layers;
        if (o->act.hidden % o->act.heads != 0)
            return fail(err, "--heads " + std::to_string(o->act.heads) + " does not divide --hidden " +
                                 std::to_string(o->act.hidden));
    }
    // Keep every byte count exact in 64 bits.
    const ActivationDims& d = o->act;
    const long double s = d.seq, big = 1e18L;
    const long double act = d.layers * (34.0L * s * d.micro_batch * d.hidden + 5.0L * d.heads * s * s * d.micro_batch);
    const long double gpt = (long double)o->gpt.hidden * o->gpt.hidden * (12.0L * o->gpt.layers + 4) +
                            (long double)o->gpt.hidden * (o->gpt.vocab * 2.0L + s);
    if (act > big || 32.0L * std::max<long double>(gpt, o->params) > big)
        return fail(err, "sizes too large for exact 64-bit byte counts");
    return parse_sharding(o, err);
}

// ---- the plan tables ---------------------------------------------------------------------------
void print_model_states(std::ostream& out, const Recipe& r, u64 psi) {
    const PerCategory per = bytes_per_param(r);
    const PerCategory bytes = model_state_bytes(r, psi);
    const Unit u = unit_for(bytes.total());
    out << "Model states (claim C1): bytes per parameter × Ψ; no batch or sequence in them (C6)\n";
    Table t({"category", "B/param", "bytes", u.name});
    for (int i = 0; i < kNumCategories; ++i)
        t.row({category_name(category_at(i)), std::to_string(per.v[i]), commas(bytes.v[i]), in_unit(bytes.v[i], u)});
    t.rule();
    t.row({"total", std::to_string(per.total()), commas(bytes.total()), in_unit(bytes.total(), u)});
    t.print(out);
    const long double gpus = bytes.total() / kGpuBytes;
    if (gpus <= 1)
        out << "  fits in one 80 GB GPU" << (gpus >= 1e-3L ? " (" + fixed(100 * gpus, 1) + "% of it)" : "")
            << " before any activation\n";
    else out << "  = " << fixed(gpus, 2) << " × an 80 GB GPU: model states alone need "
             << static_cast<u64>(std::ceil(gpus - 1e-12L)) << " of them (claim C1)\n";
    const u64 pg = per[Category::param] + per[Category::grad];
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
    const struct { const char* label; Recipe r; } rows[] = {
        {"adamw, mixed bf16 (C1)", {O::adamw, bf16, f32, a16, m32, 0.9}},
        {"adamw, bf16 + fp32 grad accum (C3)", {O::adamw, bf16, f32, a32, m32, 0.9}},
        {"adamw, bf16, no master", {O::adamw, bf16, f32, a16, none, 0.9}},
        {"adamw, fp32", {O::adamw, pure, f32, a16, none, 0.9}},
        {"adamw, fp64", {O::adamw, pure, f64, a16, none, 0.9}},
        {"sgd+momentum, mixed bf16 (C3)", {O::sgd, bf16, f32, a16, m32, 0.9}},
        {"sgd+momentum, fp32", {O::sgd, pure, f32, a16, none, 0.9}},
        {"sgd+momentum, fp64", {O::sgd, pure, f64, a16, none, 0.9}},
        {"sgd, momentum 0, fp32", {O::sgd, pure, f32, a16, none, 0.0}},
        {"adam8bit, mixed bf16 (C3)", {O::adam8bit, bf16, f32, a16, m32, 0.9}}};
    const Unit u = unit_for(model_state_bytes(rows[4].r, psi).total());   // fp64 is the largest
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

void print_activations(std::ostream& out, const ActivationDims& d, Attention chosen, u64 model_bytes) {
    const ActivationEstimate naive = estimate_activations(d, Attention::naive);
    const ActivationEstimate flash = estimate_activations(d, Attention::flash);
    const Unit u = unit_for(std::max(naive.total, model_bytes));
    const u64 sbh = d.seq * d.micro_batch * d.hidden;
    out << "Activations per layer ≈ s·b·h·(34 + 5·a·s/h) bytes, 2-byte activations (claims C4, C5)\n"
        << "  s=" << d.seq << " b=" << d.micro_batch << " h=" << d.hidden << " a=" << d.heads << " L=" << d.layers
        << ": s·b·h = " << commas(sbh) << ", 5·a·s/h = " << shortest(5.0L * d.heads * d.seq / d.hidden)
        << "; * = --attention\n";
    Table t({"attention", "linear/layer", "quadratic/layer", "per layer", "× L", "whole model"});
    for (const auto& [a, e] : {std::pair{Attention::naive, naive}, std::pair{Attention::flash, flash}})
        t.row({std::string(a == chosen ? "* " : "  ") + attention_name(a), in_unit(e.linear_per_layer, u),
               in_unit(e.quadratic_per_layer, u), in_unit(e.per_layer, u), std::to_string(d.layers),
               in_unit(e.total, u)});
    t.print(out);
    out << "\nOne GPU, no parallelism: model states + activations (claim C6: only activations move with b, s,\n"
           "attention kernel and recompute)\n";
    Table m({"attention", "model states", "activations", "total"});
    for (const auto& [a, e] : {std::pair{Attention::naive, naive}, std::pair{Attention::flash, flash}})
        m.row({std::string(a == chosen ? "* " : "  ") + attention_name(a), in_unit(model_bytes, u),
               in_unit(e.total, u), in_unit(model_bytes + e.total, u)});
    m.print(out);
    if (naive.total > model_bytes)
        out << "  naive activations exceed the model states at b=" << d.micro_batch << " (claim C4)\n";
}

int print_plan(const Options& o, std::ostream& out) {
    const bool preset = o.given.count("preset") > 0;
    const u64 psi = plan_psi(o);
    out << "shardlab plan: the chapter's memory formulas (1 GB = 1e9 bytes)\n";
    if (preset) {
        out << "model:  preset " << o.preset.name << ", Ψ = " << commas(psi) << " (the chapter's round number)\n";
        if (o.preset.name == "70b")
            out << "        the chapter gives no 70B shape; activations use h=8192 L=80 a=64 (our choice)\n";
    } else {
        const u64 counted = gpt_param_count(o.gpt);
        out << "model:  GPT V=" << o.gpt.vocab << " T=" << o.gpt.seq << " C=" << o.gpt.hidden << " L=" << o.gpt.layers
            << " heads=" << o.act.heads << ": " << commas(counted) << " params, N_matmul = "
            << commas(gpt_matmul_param_count(o.gpt)) << ", " << commas(gpt_flops_per_token(o.gpt, o.gpt.seq))
            << " model FLOPs/token\n";
        out << "        Ψ = " << commas(psi) << (o.params ? " (from --params)" : " (counted from the dims)") << "\n";
    }
    out << "recipe: " << recipe_label(o.recipe) << "\n\n";
    print_model_states(out, o.recipe, psi);
    print_variants(out, o.recipe, psi);
    print_activations(out, o.act, o.attention, model_state_bytes(o.recipe, psi).total());
    if (o.sharding) {
        out << "\n";
        print_sharding(out, o.recipe, psi, o.dp, o.act, o.attention);
    }
    return 0;
}

int run_ledger(const std::string& path, std::ostream& out, std::ostream& err) {
    std::ifstream f(path);
    if (!f) { err << "plan: cannot read ledger '" << path << "'\n"; return 2; }
    std::stringstream text;
    text << f.rdbuf();
    LedgerCheck c;
    try {
        c = check_ledger_text(text.str());
    } catch (const std::exception& e) {
        err << "plan: " << path << ": " << e.what() << "\n";
        return 2;
    }
    return print_ledger_check(out, path, c);
}

}  // namespace

bool find_preset(const std::string& name, Preset* out) {
    if (name == "7b")   // claims C1, C4: the chapter's 7B example (h, L, a, s, b)
        *out = Preset{"7b", 7000000000ULL, ActivationDims{4096, 32, 32, 2048, 1}};
    else if (name == "70b")  // claim C1: Ψ = 70e9; h=8192 L=80 a=64 is our choice, not the chapter's
        *out = Preset{"70b", 70000000000ULL, ActivationDims{8192, 80, 64, 2048, 1}};
    return name == "7b" || name == "70b";
}

int plan_run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
    Options o;
    if (const int rc = parse_options(args, &o, err)) return rc;
    if (o.help) { out << kUsage; return 0; }
    if (o.given.count("ledger")) return run_ledger(o.given["ledger"], out, err);
    return print_plan(o, out);
}

int plan_main(int argc, char** argv) {
    std::vector<std::string> args(argv + (argc > 0 ? 1 : 0), argv + argc);
    return plan_run(args, std::cout, std::cerr);
}

}  // namespace shardlab::plan
