// `shardlab sample --load CKPT [--prompt TEXT --tokens N --temperature X --seed S]`: text generation
// from a checkpoint's weights. Each new byte is drawn from the model's distribution at the last
// position, sharpened by 1/temperature (0: always the most likely byte), with counter-based randomness.
// A model that cannot fit in the machine's memory is refused before anything is allocated, as eval does.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <vector>

#include "cli/command.h"
#include "core/rng.h"
#include "train/inference.h"
#include "train/memory_check.h"

namespace shardlab {

int sample_command(const CommandArgs& args, const Runtime& rt) {
  std::string load, prompt = "\n";
  int tokens = 300;
  double temperature = 0.8;
  uint64_t seed = 1;
  bool force_memory = false;
  Flags flags("shardlab sample", "Generate text from a checkpoint's weights.");
  flags.add("--load", load, "checkpoint: a --save directory (its latest step) or one step_NNNNNN directory");
  flags.add("--prompt", prompt, "text to continue");
  flags.add("--tokens", tokens, "bytes to generate", 0, 100000000);
  flags.add("--temperature", temperature, "sampling temperature (0: always the most likely byte)");
  flags.add("--seed", seed, "random seed of the sampling");
  flags.flag("--force-memory", force_memory, "start even when the memory estimate exceeds what the machine has");
  if (int rc = parse_command(flags, args, rt, "shardlab sample"); rc >= 0) return rc;
  std::string err = load.empty()      ? "--load CKPT is required (a checkpoint directory or one of its step_NNNNNN)"
                    : temperature < 0 ? "--temperature must be ≥ 0"
                                      : "";
  if (!err.empty()) {
    if (rt.is_root()) print_line("shardlab sample", "error", err);
    return 2;
  }
  CheckpointHold hold(load);  // its config and its weights from one step, which no --keep-last prunes meanwhile
  TrainConfig ck = checkpoint_config(hold.step_dir());
  if (std::string why = check_inference_memory(ck, 1, 0, force_memory); !why.empty()) throw std::invalid_argument(why);
  std::vector<int32_t> text;
  for (unsigned char c : prompt) {
    if (c >= ck.model.vocab) throw std::invalid_argument("--prompt has a byte outside the model's vocabulary");
    text.push_back(c);
  }
  if (text.empty()) text.push_back('\n');
  if (rt.is_root()) std::fwrite(prompt.data(), 1, prompt.size(), stdout);
  return with_checkpoint_model(ck, hold, 1, [&](auto& model, const auto* params) {
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
        for (int v = 0; v < V; ++v) {
          acc += w[v];
          if (u < acc) {
            next = v;
            break;
          }
        }
      }
      text.push_back(next);
      if (rt.is_root()) std::fputc(next, stdout);
    }
    if (rt.is_root()) std::fputc('\n', stdout);
    return 0;
  });
}

}  // namespace shardlab
