// GPT dimensions. Legend used in shape comments throughout src/model:
//   B batch (micro-batch), T sequence, C hidden, NH heads, HD = C/NH head size, V vocab, L layers.
#pragma once
#include <cmath>
#include <string>

#include "model/token_positions.h"

namespace shardlab {

// A mixture of experts in place of the MLP (claim C25; model/moe.h): in every `every`-th block (blocks l with
// l % every == 0, Megatron's moe-layer-freq) the MLP becomes `experts` expert MLPs behind a router that sends
// each token to `top_k` of them. Dense (no MoE) when experts = 0.
struct MoeConfig {
  int experts = 0;         // E (0: every block keeps its dense MLP)
  int top_k = 2;           // k slots per token (GShard, Mixtral: 2)
  int every = 1;           // which blocks: l % every == 0
  int ffn = 0;             // each expert's width F (0: 4·hidden, the dense MLP's)
  double capacity = 0.0;   // slots per expert per sample = ceil(seq·k/E·capacity); 0: dropless
  double aux_loss = 0.01;  // α of the load-balancing loss (Switch: 10⁻²)
  double z_loss = 0.0;     // β of the router z-loss (ST-MoE suggests 10⁻³)
  bool on() const { return experts > 0; }
  bool in_block(int layer) const { return on() && layer % every == 0; }
  int width(int hidden) const { return ffn > 0 ? ffn : 4 * hidden; }
  // Slots an expert keeps of one sample's `seq`·k (0: all).
  int slots_per_sample(int seq) const {
    return capacity > 0 ? static_cast<int>(std::ceil(double(seq) * top_k / experts * capacity - 1e-9)) : 0;
  }
  int blocks(int layers) const { return on() ? (layers + every - 1) / every : 0; }
  std::string validate(int layers) const {
    if (!on()) return experts < 0 ? "--moe-experts must not be negative (0: no experts)" : "";
    if (top_k < 1 || top_k > experts)
      return "--moe-top-k " + std::to_string(top_k) + " must be between 1 and --moe-experts " + std::to_string(experts);
    if (every < 1 || every > layers)
      return "--moe-every " + std::to_string(every) + " must be between 1 and --layers " + std::to_string(layers);
    if (ffn < 0) return "--moe-ffn must not be negative (0: 4·hidden)";
    if (!(capacity >= 0) || std::isinf(capacity))
      return "--moe-capacity must be a finite factor ≥ 0 (0: dropless; 1.25 keeps 1.25× an even share)";
    if (!(aux_loss >= 0) || std::isinf(aux_loss) || !(z_loss >= 0) || std::isinf(z_loss))
      return "--moe-aux-loss and --moe-z-loss must be finite and ≥ 0";
    return "";
  }
};

struct GPTConfig {
  int layers = 4;    // L
  int hidden = 128;  // C
  int heads = 4;     // NH
  int seq = 64;      // T (max positions; every window is exactly T tokens)
  int vocab = 256;   // V (bytes)
  double dropout = 0.0;
  MoeConfig moe;

  int head_dim() const { return hidden / heads; }
  // Empty if valid, else one sentence naming what is wrong.
  std::string validate() const {
    if (layers <= 0 || hidden <= 0 || heads <= 0 || seq <= 0 || vocab <= 0)
      return "--layers, --hidden, --heads, --seq and --vocab must all be positive";
    if (hidden % heads != 0)
      return "--hidden " + std::to_string(hidden) + " is not divisible by --heads " + std::to_string(heads);
    if (vocab > 256) return "--vocab " + std::to_string(vocab) + " exceeds 256 (tokens are bytes)";
    if (!(dropout >= 0.0 && dropout < 1.0)) return "--dropout must be in [0, 1)";
    return moe.validate(layers);
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
  int ep = 1, ep_rank = 0;  // expert parallelism: this rank holds experts [ep_rank·E/ep, (ep_rank+1)·E/ep)
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
