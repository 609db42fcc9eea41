// What `shardlab moe-layer` (cli/moe_layer.cpp) finds on each rank, carried to every rank as numbers
// (all_gather_values), and the page it prints from them: the layer, the router's choices for a few tokens, the
// rows each expert received from each source rank beside one process's routing, whether those rows are the tokens'
// rows, the all-to-alls' bytes (comm ledger) beside rows·C·bytes, one verdict per tensor, the result line.
// Leaves out: computing anything (moe_layer.cpp does).
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace shardlab {

struct MoeProblem {
  int E = 8, k = 2, C = 16, F = 32;  // experts, slots per token, hidden, each expert's width
  int R = 32, G = 16;                // rows per rank, rows per routing group
  double capacity = 0;               // factor of the even share G·k/E (0: dropless)
  double aux = 0.01, z = 0.001, rtol = 0;
  uint64_t seed = 1234;
  const char* dtype = "f64";
  // Slots each expert keeps per group (0: all), as the trainer's MoeConfig::slots_per_sample.
  int capacity_slots() const {
    return capacity > 0 ? static_cast<int>(std::ceil(double(G) * k / E * capacity - 1e-9)) : 0;
  }
};

inline constexpr int kMoeTensors = 7;  // output, d_x, d_router.weight, d_fc.weight, d_fc.bias, d_proj.*
inline constexpr const char* kMoePurposes[3] = {"moe_counts", "moe_dispatch", "moe_combine"};

// One tensor: the largest difference relative to the tensor's largest element (+inf where the value is not a
// finite number), and the first element past the tolerance (its index in the whole tensor).
struct TensorCheck {
  double worst = 0, found = 0, index = 0, want = 0, got = 0;
  void add(double g, double w, double scale, double tol, size_t i) {
    const double rel = std::isfinite(g) ? std::fabs(g - w) / scale : INFINITY;
    worst = std::max(worst, rel);
    if (found == 0 && !(rel <= tol)) found = 1, index = double(i), want = w, got = g;
  }
};

// The first row an expert computed on that is not its token's row: which expert, its row among the expert's rows,
// the source rank, the token expected, and what came (a token's index, −1 a row of zeros, −2 no token's row).
struct BadRow {
  double found = 0, expert = 0, row = 0, source = 0, want = 0, got = 0;
};

// One rank's findings.
struct MoeRankReport {
  TensorCheck vs_one[kMoeTensors];                   // its part of each tensor against one process's
  double calls[3] = {}, sent[3] = {}, recv[3] = {};  // the comm ledger on the ep axis, by kMoePurposes
  double dropped = 0;                                // slots its routing dropped
  BadRow bad_row;
  std::vector<int> received;  // (e, El): the rows its local expert j received from source rank s, at s·El + j
  std::vector<double> pack() const;
  static std::vector<MoeRankReport> unpack_all(const std::vector<double>& all, int e, int El);
};

// Everything the page shows; the same on every rank.
struct MoeReport {
  struct Token {
    int t;
    std::vector<int> expert;
    std::vector<double> gate;
    std::vector<bool> kept;
  };
  std::vector<Token> tokens;              // a few tokens' slots, from one process's routing
  std::vector<int> expected;              // (E, e): one process's routing: expert g's kept slots from source rank s
  std::vector<int> rows_out;              // (e): rows each rank sends to other ranks' experts
  std::vector<int> rows_in;               // (e): rows each rank's experts receive from other ranks
  int dropped = 0;                        // slots one process's routing dropped
  TensorCheck one_vs_plain[kMoeTensors];  // one process against the plain loop
  std::vector<MoeRankReport> ranks;
};

// Prints the page when `print` (rank 0); true if everything agrees. elem_bytes: 8 (f64) or 4 (f32).
bool moe_layer_report(const MoeProblem& P, const MoeReport& rep, int e, bool print, size_t elem_bytes);

}  // namespace shardlab
