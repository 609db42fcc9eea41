// Where the routed tokens meet their experts (claim C25): the seam between the router's side of a
// mixture-of-experts layer (every rank's own tokens) and the experts' side (the rows an expert computes).
//   counts      which rows arrive: from each source rank, for each of this rank's experts;
//   to_experts  the kept slots' rows (n, C), grouped by expert in expert order → this rank's experts' rows
//               (m, C), grouped by local expert, each expert's rows in source-rank order;
//   to_slots    the reverse: the experts' rows back to the slots' order on the rank they came from.
// One process (this class): every expert is here and the rows stay where they are. Expert parallelism
// (parallel/expert_parallel.h) makes counts an all-to-all of token counts and the other two all-to-all(v)s:
// the dispatch and the combine of forward, mirrored in backward.
#pragma once
#include <cstring>
#include <vector>

namespace shardlab {

// The rows this rank's experts compute: count[s·local + e] came from source rank s for local expert e; and
// the rows of this rank's slots that went to each rank's experts, sent[j] (in the list's order).
struct ExpertRows {
  int sources = 1, local = 0;
  std::vector<int> count;
  std::vector<int> sent;
  int from(int s, int e) const { return count[size_t(s) * local + e]; }
  int of_expert(int e) const {
    int n = 0;
    for (int s = 0; s < sources; ++s) n += from(s, e);
    return n;
  }
  int rows() const {
    int n = 0;
    for (int c : count) n += c;
    return n;
  }
};

template <class T>
class ExpertExchange {
 public:
  virtual ~ExpertExchange() = default;
  // per_expert (E): this rank's kept slots per expert (all E experts, in order).
  virtual ExpertRows counts(const int* per_expert, int E) {
    ExpertRows rows{1, E, std::vector<int>(per_expert, per_expert + E), {}};
    rows.sent = {rows.rows()};
    return rows;
  }
  // slot_rows (n, C) → expert_rows (m, C), laid out as `rows` says.
  virtual void to_experts(const T* slot_rows, int n, T* expert_rows, const ExpertRows& rows, int C) {
    std::memcpy(static_cast<void*>(expert_rows), slot_rows, size_t(n) * C * sizeof(T));
  }
  virtual void to_slots(const T* expert_rows, const ExpertRows& rows, T* slot_rows, int n, int C) {
    std::memcpy(static_cast<void*>(slot_rows), expert_rows, size_t(n) * C * sizeof(T));
  }
};

}  // namespace shardlab
