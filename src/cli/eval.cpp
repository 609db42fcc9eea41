// `shardlab eval --load CKPT [--data FILE] [--max-windows N] [--batch B]`: the mean loss of a
// checkpoint's weights over a file's non-overlapping windows (no dropout, no gradients).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "cli/command.h"
#include "io/data.h"
#include "train/evaluate.h"
#include "train/inference.h"
#include "train/memory_check.h"

namespace shardlab {

int eval_command(const CommandArgs& args, const Runtime& rt) {
  std::string load, data_path = "data/corpus.txt";
  int max_windows = 0, batch = 8;
  ProgressMode progress_mode = ProgressMode::automatic;
  bool force_memory = false;
  Flags flags("shardlab eval", "Mean loss of a checkpoint's weights over the windows of a text file.");
  flags.add("--load", load, "checkpoint: a --save directory (its latest step) or one step_NNNNNN directory");
  flags.add("--data", data_path, "text file to evaluate on (bytes are tokens)");
  flags.add("--max-windows", max_windows, "evaluate the first N windows only (0: all)", 0, 100000000);
  flags.add("--batch", batch, "windows per forward pass", 1, 4096);
  flags.choice("--progress", progress_mode, kProgressWords, "progress display (auto: a bar on a terminal)");
  flags.flag("--force-memory", force_memory, "start even when the memory estimate exceeds what the machine has");
  if (int rc = parse_command(flags, args, rt, "shardlab eval"); rc >= 0) return rc;
  if (load.empty()) {
    if (rt.is_root())
      std::fprintf(
          stderr, "shardlab eval: error: --load CKPT is required (a checkpoint directory or one of its step_NNNNNN)\n");
    return 2;
  }
  TrainConfig ck = checkpoint_config(load);
  TextData data(data_path, ck.model.seq, ck.model.vocab);
  if (std::string err = check_inference_memory(ck, batch, double(data.train_bytes() + data.val_bytes()), force_memory);
      !err.empty())
    throw std::invalid_argument(err + (batch > 1 ? " (or a smaller --batch)" : ""));
  return with_checkpoint_model(ck, load, batch, [&](auto& model, const auto* params) {
    int n = data.windows(TextData::Part::whole);
    if (max_windows > 0) n = std::min(n, max_windows);
    using T = std::remove_const_t<std::remove_pointer_t<decltype(params)>>;
    FlatAccess<T> weights(model.layout(), params, nullptr);
    const int batches = (n + batch - 1) / batch;
    Progress progress(rt.is_root() ? progress_mode : ProgressMode::none, 0, batches, double(batch) * ck.model.seq,
                      "batch");
    double loss = evaluate_windows(model.chunk(), weights, data, n, TextData::Part::whole, &progress);
    progress.finish();
    if (rt.is_root())
      std::printf("mean loss %.6f nats/token (%.4f bits/byte) over %d windows of %d tokens of %s\n", loss,
                  loss / std::log(2.0), n, ck.model.seq, data.path().c_str());
    return 0;
  });
}

}  // namespace shardlab
