// GPT dimensions. Legend used in shape comments throughout src/model:
//   B batch (micro-batch), T sequence, C hidden, NH heads, HD = C/NH head size, V vocab, L layers.
#pragma once
#include <string>

namespace shardlab {

struct GPTConfig {
  int layers = 4;    // L
  int hidden = 128;  // C
  int heads = 4;     // NH
  int seq = 64;      // T (max positions; every window is exactly T tokens)
  int vocab = 256;   // V (bytes)
  double dropout = 0.0;

  int head_dim() const { return hidden / heads; }
  // Empty if valid, else one sentence naming what is wrong.
  std::string validate() const {
    if (layers <= 0 || hidden <= 0 || heads <= 0 || seq <= 0 || vocab <= 0)
      return "--layers, --hidden, --heads, --seq and --vocab must all be positive";
    if (hidden % heads != 0)
      return "--hidden " + std::to_string(hidden) + " is not divisible by --heads " + std::to_string(heads);
    if (vocab > 256) return "--vocab " + std::to_string(vocab) + " exceeds 256 (tokens are bytes)";
    if (dropout < 0.0 || dropout >= 1.0) return "--dropout must be in [0, 1)";
    return "";
  }
};

}  // namespace shardlab
