// plan/plan_cli.cpp — `shardlab plan`: flag parsing, the aligned tables of model states (C1, C3) and
// activations (C4, C5, C6), and the --ledger check of measured model-state bytes against the formula.
// Leaves out: per-rank formulas of sharded layouts and communication estimates (see plan_cli.h).
#include "plan/plan_cli.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>

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
    "       shardlab plan --ledger RUN/ledger.json   (exit 0 iff measured model states == formula)\n"
    "Defaults: the trainer's GPT (L 4, C 128, A 4, S 64, V 256), micro-batch 1, and the chapter's\n"
    "recipe (adamw, mixed bf16, bf16 grads, fp32 master); --dtype f64 alone means pure f64. With\n"
    "--preset only --seq, --micro-batch and recipe flags may be added. 1 GB = 1e9 bytes.\n";

std::string commas(u64 x) {
    std::string s = std::to_string(x);
    for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
    return s;
}

// One unit per table, picked from its largest number, so columns compare at a glance.
struct Unit { const char* name; long double scale; };
Unit unit_for(u64 max_bytes) {
    if (max_bytes >= 1000000000ULL) return {"GB", 1e9L};
    if (max_bytes >= 1000000ULL) return {"MB", 1e6L};
    if (max_bytes >= 1000ULL) return {"kB", 1e3L};
    return {"B", 1.0L};
}
std::string fixed(long double x, int digits) {
    std::ostringstream o;
    o << std::fixed << std::setprecision(digits) << x;
    return o.str();
}
std::string in_unit(u64 bytes, Unit u) {
    return fixed(static_cast<long double>(bytes) / u.scale, u.scale == 1.0L ? 0 : 3) + " " + u.name;
}
std::string shortest(long double x) {   // 80 → "80", 2.5 → "2.5"
    std::ostringstream o;
    o << static_cast<double>(x);
    return o.str();
}

// Aligned text table: first column left-aligned, the rest right-aligned; an empty row is a rule.
class Table {
public:
    explicit Table(std::vector<std::string> header) : rows_{std::move(header), {}} {}
    void row(std::vector<std::string> r) { rows_.push_back(std::move(r)); }
    void rule() { rows_.emplace_back(); }
    void print(std::ostream& out) const {
        std::vector<size_t> w(rows_[0].size(), 0);
        for (const auto& r : rows_)
            for (size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], width(r[i]));
        size_t total = 0;
        for (size_t x : w) total += x + 2;
        for (const auto& r : rows_) {
            std::string s = r.empty() ? "  " + std::string(total - 2, '-') : "";
            for (size_t i = 0; i < r.size(); ++i) {
                const std::string pad(w[i] - width(r[i]), ' ');
                s += "  " + (i == 0 ? r[i] + pad : pad + r[i]);
            }
            while (!s.empty() && s.back() == ' ') s.pop_back();
            out << s << "\n";
        }
    }

private:
    static size_t width(const std::string& s) {   // UTF-8 code points (Ψ, ×, ² count as one)
        size_t n = 0;
        for (unsigned char c : s) n += (c & 0xC0) != 0x80;
        return n;
    }
    std::vector<std::vector<std::string>> rows_;   // header, rule, then rows (empty = a rule)
};

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
};

const char* const kValueFlags[] = {"preset", "layers", "hidden", "heads", "seq", "vocab", "params",
                                   "micro-batch", "optimizer", "momentum", "mixed", "dtype",
                                   "grad-accum-dtype", "master", "attention", "ledger"};

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
    return 0;
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
    const u64 psi = preset ? o.preset.psi : (o.params ? o.params : gpt_param_count(o.gpt));
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
    out << "ledger: " << path << "\n"
        << "  Ψ = " << commas(c.psi) << " (model.params); recipe: " << recipe_label(c.recipe)
        << "; world size " << c.world_size << "\n"
        << "Model states: formula (claims C1, C3) vs rank 0's current bytes\n";
    Table t({"category", "formula bytes", "measured bytes", "match"});
    u64 ft = 0, mt = 0;
    for (const LedgerRow& r : c.rows) {
        t.row({category_name(r.category), commas(r.formula), r.present ? commas(r.measured) : "(absent)",
               r.match ? "yes" : "NO"});
        ft += r.formula;
        mt += r.measured;
    }
    t.rule();
    t.row({"total", commas(ft), commas(mt), ft == mt ? "yes" : "NO"});
    t.print(out);
    if (c.world_size > 1)
        out << "  note: the formula is the unsharded per-rank total (plain DP replicates it, claim C11);\n"
               "  ZeRO/FSDP/TP runs shard model states and are not checked here.\n";
    if (c.ok()) out << "result: every category matches exactly\n";
    else {
        out << "result: MISMATCH in";
        for (const LedgerRow& r : c.rows)
            if (!r.match)
                out << " " << category_name(r.category) << " (measured " << (r.measured > r.formula ? "+" : "-")
                    << commas(r.measured > r.formula ? r.measured - r.formula : r.formula - r.measured) << " B)";
        out << "\n";
    }
    return c.ok() ? 0 : 1;
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
