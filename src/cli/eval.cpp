// `shardlab eval --load CKPT [--data FILE] [--split val|train|all] [--max-windows N] [--batch B]`: the mean
// loss of a checkpoint's weights over the non-overlapping windows of a file's split — by default its
// validation split, the part training holds out (io/data.h) — with no dropout and no gradients.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "cli/command.h"
#include "io/data.h"
#include "report/format.h"
#include "train/evaluate.h"
#include "train/inference.h"
#include "train/memory_check.h"

namespace shardlab {

namespace {
const Spelling<TextData::Part> kSplitWords[] = {
    {"val", TextData::Part::validation}, {"train", TextData::Part::train}, {"all", TextData::Part::whole}};

// "the validation split of FILE (its last 2,000 bytes, held out from training)" and the like.
std::string split_text(const TextData& data, TextData::Part part) {
  const std::string bytes = commas(data.bytes(part)) + " bytes";
  switch (part) {
    case TextData::Part::validation:
      return "the validation split of " + data.path() + " (its last " + bytes + ", held out from training)";
    case TextData::Part::train: return "the train split of " + data.path() + " (its first " + bytes + ")";
    case TextData::Part::whole: break;
  }
  return "all of " + data.path() + " (" + bytes + ")";
}
}  // namespace

int eval_command(const CommandArgs& args, const Runtime& rt) {
  std::string load, data_path = "data/corpus.txt";
  int max_windows = 0, batch = 8;
  TextData::Part split = TextData::Part::validation;
  ProgressMode progress_mode = ProgressMode::automatic;
  bool force_memory = false;
  Flags flags("shardlab eval", "Mean loss of a checkpoint's weights over the windows of a text file's split.");
  flags.add("--load", load, "checkpoint: a --save directory (its latest step) or one step_NNNNNN directory");
  flags.add("--data", data_path, "text file to evaluate on (bytes are tokens)");
  flags.choice("--split", split, kSplitWords,
               "the file's part: val (the part training holds out as validation), train, or all of it");
  flags.add("--max-windows", max_windows, "evaluate the split's first N windows only (0: all)", 0, 100000000);
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
  CheckpointHold hold(load);  // its config and its weights from one step, which no --keep-last prunes meanwhile
  TrainConfig ck = checkpoint_config(hold.step_dir());
  TextData data(data_path, ck.model.seq, ck.model.vocab);
  if (std::string err = check_inference_memory(ck, batch, double(data.train_bytes() + data.val_bytes()), force_memory);
      !err.empty())
    throw std::invalid_argument(err + (batch > 1 ? " (or a smaller --batch)" : ""));
  return with_checkpoint_model(ck, hold, batch, [&](auto& model, const auto* params) {
    int n = data.windows(split);
    if (max_windows > 0) n = std::min(n, max_windows);
    using T = std::remove_const_t<std::remove_pointer_t<decltype(params)>>;
    FlatAccess<T> weights(model.layout(), params, nullptr);
    const int batches = (n + batch - 1) / batch;
    Progress progress(rt.is_root() ? progress_mode : ProgressMode::none, 0, batches, double(batch) * ck.model.seq,
                      "batch");
    double loss = evaluate_windows(model.chunk(), weights, data, n, split, &progress);
    progress.finish();
    if (rt.is_root())
      std::printf("mean loss %.6f nats/token (%.4f bits/byte) over %d window%s of %d tokens of %s\n", loss,
                  loss / std::log(2.0), n, n == 1 ? "" : "s", ck.model.seq, split_text(data, split).c_str());
    return 0;
  });
}

}  // namespace shardlab
