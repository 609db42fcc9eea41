// Flag table, parsing, validation and JSON round trip of TrainConfig (see train_config.h).
#include "train/train_config.h"

#include <cerrno>
#include <cmath>
#include <filesystem>
#include <cstdlib>
#include <functional>
#include <sstream>

namespace shardlab {

namespace {

struct Flag {
  const char* name;
  const char* help;
  std::function<std::string(const std::string&)> set;  // "" on success, else what is wrong
  std::function<nlohmann::json()> get;
};

std::string parse_int(const std::string& s, int& out) {
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end || errno || v < -2147483647L || v > 2147483647L) return "expects an integer, got '" + s + "'";
  out = static_cast<int>(v);
  return "";
}
std::string parse_u64(const std::string& s, uint64_t& out) {
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (s.empty() || s[0] == '-' || *end || errno) return "expects a non-negative integer, got '" + s + "'";
  out = v;
  return "";
}
std::string parse_double(const std::string& s, double& out) {
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end || errno || !std::isfinite(v)) return "expects a finite number, got '" + s + "'";
  out = v;
  return "";
}

Flag int_flag(const char* n, const char* h, int& v) {
  return {n, h, [&v](const std::string& s) { return parse_int(s, v); }, [&v] { return nlohmann::json(v); }};
}
Flag dbl_flag(const char* n, const char* h, double& v) {
  return {n, h, [&v](const std::string& s) { return parse_double(s, v); }, [&v] { return nlohmann::json(v); }};
}
Flag str_flag(const char* n, const char* h, std::string& v) {
  return {n, h, [&v](const std::string& s) { v = s; return std::string(); }, [&v] { return nlohmann::json(v); }};
}
Flag choice_flag(const char* n, const char* h, std::string& v, std::vector<std::string> choices) {
  return {n, h,
          [&v, choices](const std::string& s) {
            std::string all;
            for (const std::string& c : choices) {
              if (c == s) { v = s; return std::string(); }
              all += (all.empty() ? "" : "|") + c;
            }
            return "expects one of " + all + ", got '" + s + "'";
          },
          [&v] { return nlohmann::json(v); }};
}

std::vector<Flag> flag_table(TrainConfig& c) {
  return {
      int_flag("layers", "transformer blocks L (4)", c.model.layers),
      int_flag("hidden", "hidden size C (128)", c.model.hidden),
      int_flag("heads", "attention heads NH (4)", c.model.heads),
      int_flag("seq", "sequence length T (64)", c.model.seq),
      int_flag("vocab", "vocabulary size, bytes (256)", c.model.vocab),
      dbl_flag("dropout", "dropout probability (0)", c.model.dropout),
      int_flag("micro-batch", "samples per forward/backward (32)", c.micro_batch),
      int_flag("global-batch", "samples per optimizer step; a multiple of --micro-batch (32)", c.global_batch),
      choice_flag("optimizer", "adamw | sgd (adamw)", c.optimizer, {"adamw", "sgd"}),
      dbl_flag("lr", "peak learning rate (4e-3)", c.lr),
      choice_flag("lr-schedule", "constant | cosine (cosine)", c.lr_schedule, {"constant", "cosine"}),
      int_flag("warmup", "linear warmup steps (20)", c.warmup),
      dbl_flag("min-lr-ratio", "cosine floor as a fraction of --lr (0.1)", c.min_lr_ratio),
      dbl_flag("weight-decay", "decoupled weight decay on matrices (0.1)", c.weight_decay),
      dbl_flag("beta1", "AdamW beta1 (0.9)", c.beta1),
      dbl_flag("beta2", "AdamW beta2 (0.95)", c.beta2),
      dbl_flag("eps", "AdamW epsilon (1e-8)", c.eps),
      dbl_flag("momentum", "SGD momentum; 0 keeps no state (0.9)", c.momentum),
      dbl_flag("clip", "clip the global gradient norm to this; 0 = off (1.0)", c.clip),
      choice_flag("dtype", "compute type f32 | f64 (f32)", c.dtype, {"f32", "f64"}),
      choice_flag("mixed", "none | bf16: bf16 params and grads, fp32 optimizer (none)", c.mixed, {"none", "bf16"}),
      choice_flag("grad-accum-dtype", "bf16 | fp32 gradient storage with --mixed bf16 (bf16)", c.grad_accum_dtype,
                  {"bf16", "fp32"}),
      choice_flag("master", "fp32 | none: fp32 master weights with --mixed bf16 (fp32)", c.master, {"fp32", "none"}),
      {"seed", "random seed (1234)", [&c](const std::string& s) { return parse_u64(s, c.seed); },
       [&c] { return nlohmann::json(c.seed); }},
      int_flag("steps", "total optimizer steps (300)", c.steps),
      str_flag("data", "training text file, bytes are tokens (data/corpus.txt)", c.data),
      int_flag("eval-every", "validation loss every N steps; 0 = only at the end (50)", c.eval_every),
      int_flag("eval-windows", "validation windows per evaluation (64)", c.eval_windows),
      str_flag("out", "write loss.csv and ledger.json into DIR", c.out),
      str_flag("save", "write checkpoints into DIR", c.save),
      int_flag("save-every", "checkpoint every N steps; 0 = at the end only (0)", c.save_every),
      str_flag("resume", "continue from DIR/latest", c.resume),
      choice_flag("progress", "auto | bar | lines | none (auto: a bar on a terminal)", c.progress,
                  {"auto", "bar", "lines", "none"}),
      int_flag("dp", "data-parallel ranks (default: the whole world)", c.dp),
      int_flag("zero", "ZeRO stage 0 | 1 | 2 | 3 (0)", c.zero),
      choice_flag("fsdp", "none | full | grad_op | no_shard | hybrid (none)", c.fsdp,
                  {"none", "full", "grad_op", "no_shard", "hybrid"}),
      dbl_flag("bucket-mb", "DP gradient bucket size in MB (1)", c.bucket_mb),
      choice_flag("overlap", "on | off: sync gradients during backward (on)", c.overlap, {"on", "off"}),
      choice_flag("prefetch", "on | off: ZeRO-3 gathers the next unit early (on)", c.prefetch, {"on", "off"}),
      choice_flag("comm", "ring | mpi: hand-written rings or MPI's built-ins (ring)", c.comm, {"ring", "mpi"}),
      int_flag("ranks-per-node", "simulate nodes of K consecutive ranks (0: real nodes)", c.ranks_per_node),
      choice_flag("trace", "on | off: write DIR/trace.json, a per-rank timeline (off)", c.trace, {"on", "off"}),
  };
}

}  // namespace

std::string parse_train_args(const std::vector<std::string>& args, TrainConfig& cfg) {
  std::vector<Flag> flags = flag_table(cfg);
  for (size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i], value;
    if (a.rfind("--", 0) != 0) return "unexpected argument '" + a + "' (flags look like --name value)";
    a = a.substr(2);
    size_t eq = a.find('=');
    bool inline_value = eq != std::string::npos;
    if (inline_value) { value = a.substr(eq + 1); a = a.substr(0, eq); }
    const Flag* f = nullptr;
    for (const Flag& x : flags)
      if (a == x.name) f = &x;
    if (!f) return "unknown flag --" + a + " (shardlab train --help lists them)";
    if (!inline_value) {
      if (i + 1 >= args.size()) return "--" + a + " needs a value";
      value = args[++i];
    }
    std::string err = f->set(value);
    if (!err.empty()) return "--" + a + " " + err;
  }
  return "";
}

std::string validate_train_config(const TrainConfig& c) {
  std::string e = c.model.validate();
  if (!e.empty()) return e;
  if (c.micro_batch <= 0 || c.global_batch <= 0) return "--micro-batch and --global-batch must be positive";
  if (c.global_batch % c.micro_batch != 0)
    return "--global-batch " + std::to_string(c.global_batch) + " is not a multiple of --micro-batch " +
           std::to_string(c.micro_batch);
  if (c.steps <= 0) return "--steps must be positive";
  if (!(c.lr > 0)) return "--lr must be positive";
  if (c.warmup < 0 || c.eval_every < 0 || c.eval_windows < 0 || c.save_every < 0)
    return "--warmup, --eval-every, --eval-windows and --save-every must not be negative";
  if (c.clip < 0 || c.weight_decay < 0 || c.eps <= 0) return "--clip and --weight-decay must be ≥ 0 and --eps > 0";
  if (c.beta1 < 0 || c.beta1 >= 1 || c.beta2 < 0 || c.beta2 >= 1) return "--beta1 and --beta2 must be in [0, 1)";
  if (c.momentum < 0 || c.momentum >= 1) return "--momentum must be in [0, 1)";
  if (c.min_lr_ratio < 0 || c.min_lr_ratio > 1) return "--min-lr-ratio must be in [0, 1]";
  if (c.mixed == "bf16" && c.dtype != "f32") return "--mixed bf16 computes in f32; drop --dtype f64";
  if (c.mixed == "none" && (c.grad_accum_dtype != "bf16" || c.master != "fp32"))
    return "--grad-accum-dtype and --master only apply with --mixed bf16";
  if (c.zero < 0 || c.zero > 3) return "--zero must be 0, 1, 2 or 3";
  if (c.zero != 0 && c.fsdp != "none") return "--zero and --fsdp name the same thing; give one (fsdp full = zero 3, grad_op = zero 2, no_shard = zero 0)";
  if (c.dp < 0 || c.ranks_per_node < 0) return "--dp and --ranks-per-node must not be negative";
  if (!(c.bucket_mb > 0)) return "--bucket-mb must be positive";
  if (c.trace == "on" && c.out.empty()) return "--trace on writes DIR/trace.json: give --out DIR";
  for (const std::string* dir : {&c.out, &c.save})
    if (!dir->empty() && std::filesystem::exists(*dir) && !std::filesystem::is_directory(*dir))
      return "'" + *dir + "' exists and is not a directory (--out and --save name directories)";
  return "";
}

std::string train_usage() {
  TrainConfig c;
  std::ostringstream o;
  o << "usage: shardlab train [--flag value]...\n\n";
  for (const Flag& f : flag_table(c)) {
    std::string n = std::string("--") + f.name;
    o << "  " << n << std::string(n.size() < 20 ? 20 - n.size() : 1, ' ') << f.help << "\n";
  }
  return o.str();
}

nlohmann::json TrainConfig::to_json() const {
  TrainConfig copy = *this;
  nlohmann::json j;
  for (const Flag& f : flag_table(copy)) j[f.name] = f.get();
  return j;
}

TrainConfig TrainConfig::from_json(const nlohmann::json& j) {
  TrainConfig c;
  std::vector<std::string> args;
  for (const Flag& f : flag_table(c)) {
    if (!j.contains(f.name)) continue;
    const nlohmann::json& v = j.at(f.name);
    std::ostringstream s;
    if (v.is_string()) s << v.get<std::string>();
    else if (v.is_number_float()) { s.precision(17); s << v.get<double>(); }
    else s << v.dump();
    args.push_back(std::string("--") + f.name);
    args.push_back(s.str());
  }
  std::string err = parse_train_args(args, c);
  if (!err.empty()) throw std::runtime_error("bad config in checkpoint: " + err);
  return c;
}

}  // namespace shardlab
