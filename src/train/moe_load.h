// What a step's experts were given (claim C25: routing depends on the input, so load is uneven), summed over
// every rank that routed tokens, as the run's outputs show it:
//   loss.csv     aux_loss   the load-balancing loss E·Σ f_i·P_i, the mean over the step's samples and MoE blocks
//                           (1 when every expert gets as many slots as it is given probability; E at worst);
//                z_loss     logsumexp(logits)², the mean over the step's tokens and MoE blocks;
//                imbalance  max/mean of the slots per expert, the mean over the MoE blocks (1 = even);
//                dropped    slots capacity dropped in the step;
//   moe_load.csv one row per step and MoE block: step, layer, imbalance, then the slots each expert was routed
//                (before capacity) over the whole global batch;
//   moe_load.svg each expert's share of the step's slots over the steps (all MoE blocks together).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/block.h"
#include "model/chunk_spec.h"
#include "model/config.h"
#include "parallel/grid_sums.h"

namespace shardlab {

struct MoeStepLoad {
  double aux_loss = 0, z_loss = 0, imbalance = 0, dropped = 0;
  std::vector<int> layers;                // the MoE blocks
  std::vector<std::vector<double>> load;  // per MoE block: slots routed to each expert
  std::vector<double> columns() const { return {aux_loss, z_loss, imbalance, dropped}; }
};

extern const std::vector<std::string> kMoeLossColumns;  // aux_loss, z_loss, imbalance, dropped

// max/mean of one block's slots per expert (1 for an even load; 0 when nothing was routed).
double load_imbalance(const std::vector<double>& slots);

// Collective over the grid: the step's statistics of this rank's chunks (MoeStats, summed over them) added over
// the ranks that hold other samples or other blocks. samples: the global batch.
// exact (--exact): the two losses from their order-free sums, so every layout reports the same bits.
MoeStepLoad step_moe_load(const GPTConfig& model, const MoeStats& mine, const GridSums& sums, int samples,
                          bool exact = false);

// The run's sum of its steps' loads (drops and per-expert slots added; the losses and imbalance added, for a mean).
void add_step_load(MoeStepLoad& run, const MoeStepLoad& step);
// ledger.json's "moe": the configuration, and over `steps` steps each MoE block's slots per expert, the drops,
// and the mean of each step's loss columns.
nlohmann::json moe_run_json(const GPTConfig& model, int ep, const MoeStepLoad& run, int steps);
// ledger.json's rows of one chunk's MoE records (model/block.h's MoeForwardRows), what `plan --ledger` computes the
// MoE's activations and all-to-all bytes from: {"layers": the chunk's MoE blocks, "train": [[n, m, own] per
// block, concatenated] per training forward, in order, "eval": [[samples, n, m, own, …]] per evaluation forward}.
nlohmann::json moe_rows_json(const GPTConfig& model, const ChunkSpec& spec, const std::vector<MoeForwardRows>& rows);
// The expert parameters this rank holds (its layout's expert tensors).
size_t expert_params(const ParamLayout& layout);

std::string moe_load_header(int experts);
// The step's rows of moe_load.csv (no trailing newline), numbers as `fmt` prints them.
std::string moe_load_rows(int step, const MoeStepLoad& s);
// moe_load.csv's rows as each expert's share of its step's slots, one line per expert.
std::string moe_load_svg(const std::string& csv_path);

}  // namespace shardlab
