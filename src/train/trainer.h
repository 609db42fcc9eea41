// `shardlab train`: the training loop (single process), plus `eval` and `sample` on checkpoints.
// One optimizer step = zero grads; for each micro-batch: sample, forward, backward (scaled by
// 1/(global batch tokens), the one loss normalisation), fold grads; global grad norm; clip;
// learning rate; update. Writes loss.csv and ledger.json (--out), checkpoints (--save).
#pragma once
#include <string>
#include <vector>

#include "comm/runtime.h"
#include "train/train_config.h"

namespace shardlab {

int train_main(const std::vector<std::string>& args, const Runtime& rt);
int eval_main(const std::vector<std::string>& args, const Runtime& rt);
int sample_main(const std::vector<std::string>& args, const Runtime& rt);

}  // namespace shardlab
