// `shardlab eval` (mean loss of a checkpoint over a file's windows) and `shardlab sample`
// (text generation from a checkpoint). Both load only the weights, never optimizer states.
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <stdexcept>
#include <type_traits>

#include "core/ledger.h"
#include "core/rng.h"
#include "model/gpt.h"
#include "train/data.h"
#include "train/evaluate.h"
#include "train/model_states.h"
#include "train/train_checkpoint.h"
#include "train/trainer.h"

namespace shardlab {

namespace {

// Flags as name → value; every name must be known. Returns "" or the error.
std::string parse_simple(const std::vector<std::string>& args, std::map<std::string, std::string>& kv) {
  for (size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i];
    if (a.rfind("--", 0) != 0) return "unexpected argument '" + a + "'";
    a = a.substr(2);
    std::string v;
    size_t eq = a.find('=');
    if (eq != std::string::npos) { v = a.substr(eq + 1); a = a.substr(0, eq); }
    else if (i + 1 < args.size()) v = args[++i];
    else return "--" + a + " needs a value";
    if (!kv.count(a)) return "unknown flag --" + a;
    kv[a] = v;
  }
  return "";
}

// Loads the weights of a checkpoint into a fresh model (micro-batch `batch`) and runs fn on it.
template <class T>
int with_model(const TrainConfig& ck, const std::string& load, int batch,
               const std::function<int(GPT<T>&, const T*)>& fn) {
  TrainConfig cfg = ck;
  cfg.optimizer = "sgd";  // weights only: no optimizer states to allocate
  cfg.momentum = 0;
  ParamLayout layout(cfg.model);
  MemoryLedger ledger;
  ModelStates<T> states(cfg, layout, ledger);
  load_train_checkpoint<T>(load, layout, {{"model", &states.params()}});
  states.sync_compute(0, layout.total());
  GPT<T> model(cfg.model, layout, batch, ledger);
  return fn(model, states.compute_params());
}

int to_int(const std::string& s, const char* flag) {
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(s.c_str(), &end, 10);
  if (s.empty() || *end || errno || v < 0 || v > 100000000)
    throw std::invalid_argument(std::string("--") + flag + " expects an integer in 0..1e8, got '" + s + "'");
  return static_cast<int>(v);
}

double to_double(const std::string& s, const char* flag) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end || !std::isfinite(v) || v < 0)
    throw std::invalid_argument(std::string("--") + flag + " expects a finite number ≥ 0, got '" + s + "'");
  return v;
}

}  // namespace

int eval_main(const std::vector<std::string>& args, const Runtime& rt) {
  std::map<std::string, std::string> kv{{"load", ""}, {"data", "data/corpus.txt"}, {"max-windows", "0"}, {"batch", "8"}};
  std::string err = parse_simple(args, kv);
  if (err.empty() && kv["load"].empty()) err = "--load CKPT is required (a checkpoint directory or one of its step_NNNNNN)";
  if (!err.empty()) {
    if (rt.is_root()) std::fprintf(stderr, "shardlab eval: error: %s\n", err.c_str());
    return 2;
  }
  const int max_windows = to_int(kv["max-windows"], "max-windows"), batch = std::max(1, to_int(kv["batch"], "batch"));
  TrainConfig ck = checkpoint_config(kv["load"]);
  TextData data(kv["data"], ck.model.seq, ck.model.vocab);
  auto run = [&](auto& model, const auto* params) {
    int n = data.windows(TextData::Part::whole);
    if (max_windows > 0) n = std::min(n, max_windows);
    using T = std::remove_const_t<std::remove_pointer_t<decltype(params)>>;
    FlatAccess<T> weights(model.layout(), params, nullptr);
    double loss = evaluate_windows(model, weights, data, n, TextData::Part::whole);
    std::printf("mean loss %.6f nats/token (%.4f bits/byte) over %d windows of %d tokens of %s\n", loss,
                loss / std::log(2.0), n, ck.model.seq, data.path().c_str());
    return 0;
  };
  if (ck.dtype == "f64") return with_model<double>(ck, kv["load"], batch, run);
  return with_model<float>(ck, kv["load"], batch, run);
}

int sample_main(const std::vector<std::string>& args, const Runtime& rt) {
  std::map<std::string, std::string> kv{
      {"load", ""}, {"prompt", "\n"}, {"tokens", "300"}, {"temperature", "0.8"}, {"seed", "1"}};
  std::string err = parse_simple(args, kv);
  if (err.empty() && kv["load"].empty()) err = "--load CKPT is required (a checkpoint directory or one of its step_NNNNNN)";
  if (!err.empty()) {
    if (rt.is_root()) std::fprintf(stderr, "shardlab sample: error: %s\n", err.c_str());
    return 2;
  }
  const int tokens = to_int(kv["tokens"], "tokens");
  const double temperature = to_double(kv["temperature"], "temperature");
  const uint64_t seed = static_cast<uint64_t>(to_int(kv["seed"], "seed"));
  TrainConfig ck = checkpoint_config(kv["load"]);
  std::vector<int32_t> text;
  for (unsigned char c : kv["prompt"]) {
    if (c >= ck.model.vocab) throw std::invalid_argument("--prompt has a byte outside the model's vocabulary");
    text.push_back(c);
  }
  if (text.empty()) text.push_back('\n');
  std::fwrite(kv["prompt"].data(), 1, kv["prompt"].size(), stdout);
  auto run = [&](auto& model, const auto* params) {
    const int Tn = ck.model.seq, V = ck.model.vocab;
    std::vector<int32_t> window(Tn), dummy(Tn, 0);
    RngStream rng = rng_stream(seed, "sample");
    for (int i = 0; i < tokens; ++i) {
      // The last ≤ T tokens, left-aligned; positions after them are padding that causality ignores.
      int len = std::min<int>(Tn, static_cast<int>(text.size()));
      std::fill(window.begin(), window.end(), 0);
      std::copy(text.end() - len, text.end(), window.begin());
      model.forward(params, window.data(), dummy.data(), false, {}, 1);
      const auto* p = model.probs() + static_cast<size_t>(len - 1) * V;
      std::vector<double> w(V);
      double total = 0;
      int best = 0;
      for (int v = 0; v < V; ++v) {
        if (p[v] > p[best]) best = v;
        w[v] = temperature > 0 ? std::pow(static_cast<double>(p[v]), 1.0 / temperature) : 0.0;
        total += w[v];
      }
      int next = best;
      if (temperature > 0 && total > 0) {
        double u = rng.uniform(i) * total, acc = 0;
        for (int v = 0; v < V; ++v) { acc += w[v]; if (u < acc) { next = v; break; } }
      }
      text.push_back(next);
      std::fputc(next, stdout);
    }
    std::fputc('\n', stdout);
    return 0;
  };
  if (ck.dtype == "f64") return with_model<double>(ck, kv["load"], 1, run);
  return with_model<float>(ck, kv["load"], 1, run);
}

}  // namespace shardlab
