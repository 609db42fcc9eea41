// GPT dimensions. Legend used in shape comments throughout src/model:
//   B batch (micro-batch), T sequence, C hidden, NH heads, HD = C/NH head size, V vocab, L layers.
#pragma once
#include <string>

#include "model/token_positions.h"

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

// Which part of every layer this rank holds: tensor parallelism splits each block's heads and MLP width,
// and the LM head's vocabulary, over tp ranks (Megatron, claims C17, C19); sequence parallelism also splits
// the residual stream's positions (C23); context parallelism splits every sample's tokens over cp ranks (C24,
// token_positions.h). The whole layer and the whole sequence by default.
struct ModelSlice {
  int tp = 1, tp_rank = 0;
  bool sequence_parallel = false;
  int cp = 1, cp_rank = 0;
  ContextSplit cp_split = ContextSplit::zigzag;
  TokenPositions positions(int T) const { return TokenPositions::of_rank(T, cp, cp_rank, cp_split); }
  int T_ctx(int T) const { return T / cp; }  // tokens per sample on this rank
  // Empty if cfg can be split this way, else one sentence naming what is wrong.
  std::string validate(const GPTConfig& cfg) const {
    if (tp < 1) return "--tp must be at least 1";
    if (cfg.heads % tp != 0)
      return "--heads " + std::to_string(cfg.heads) + " is not divisible by --tp " + std::to_string(tp) +
             " (tensor parallelism gives every rank whole heads)";
    if ((4 * cfg.hidden) % tp != 0)
      return "the MLP width 4·hidden = " + std::to_string(4 * cfg.hidden) + " is not divisible by --tp " +
             std::to_string(tp);
    if (cfg.vocab % tp != 0)
      return "--vocab " + std::to_string(cfg.vocab) + " is not divisible by --tp " + std::to_string(tp) +
             " (the LM head gives every rank V/t rows of the vocabulary)";
    if (sequence_parallel && tp == 1)
      return "--sequence-parallel needs --tp 2 or more (it splits the sequence over tp)";
    if (cp < 1) return "--cp must be at least 1";
    const int pieces = cp_split == ContextSplit::zigzag && cp > 1 ? 2 * cp : cp;
    if (cfg.seq % pieces != 0)
      return "--cp " + std::to_string(cp) + " cuts --seq " + std::to_string(cfg.seq) + " into " +
             std::to_string(pieces) + (cp_split == ContextSplit::zigzag && cp > 1 ? " zigzag chunks" : " chunks") +
             ": it must be divisible by " + std::to_string(pieces);
    if (sequence_parallel && T_ctx(cfg.seq) % tp != 0)
      return "--sequence-parallel splits " +
             (cp > 1 ? "each cp rank's " + std::to_string(T_ctx(cfg.seq)) + " tokens"
                     : "--seq " + std::to_string(cfg.seq)) +
             " over --tp " + std::to_string(tp) + ": it must be divisible";
    return "";
  }
};

}  // namespace shardlab
