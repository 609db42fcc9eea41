// Expert parallelism (claim C25): every MoE block's E experts are spread over the ep ranks, E/ep whole experts
// each (rank j holds experts [j·E/ep, (j+1)·E/ep)), and the ep ranks hold different samples (ep is carved out of
// data parallelism, as in Megatron). Each rank routes its own tokens (model/moe_routing.h); the router's list
// is ordered by expert, so the rows bound for rank j's experts are one contiguous run. A MoE block then
// exchanges, over the ep axis (model/expert_exchange.h's seam):
//   counts    an all-to-all of token counts: how many rows each rank sends for each of my experts;
//   dispatch  an all-to-all(v) of the rows; what arrives is regrouped expert by expert (each expert's rows in
//             source-rank order) and every expert computes on all of them at once;
//   combine   the reverse all-to-all(v): each row goes back to the rank and the place it came from, where the
//             weighted sum over a token's slots runs in the fixed slot order — so the output is the single
//             process's, whatever rank computed each slot.
// Backward mirrors it: the slots' output gradients travel like the dispatch, the experts' input gradients like
// the combine. Every message is booked on the ep axis under purposes "moe_counts", "moe_dispatch" and
// "moe_combine" (backward's under the same names: the dispatch direction, then the combine direction).
// A rank waits in an all-to-all until the slowest rank arrives: the trace's "moe combine" spans hold the idle time
// an uneven load costs (C25).
// Every other seam passes to the wrapped hooks: tensor parallelism's, or the identity. With tp the experts stay
// whole on every tp rank (the MoE runs outside the tp regions, on rows every tp rank holds): the tp ranks of an ep
// rank compute the same experts on the same rows, each exchanging with the ep ranks of its own tp index. Context
// and sequence parallelism split a sample, which the router's per-sample groups forbid (train_config.cpp).
#pragma once
#include <vector>

#include "comm/communicator.h"
#include "comm/trace.h"
#include "core/ledger.h"
#include "model/model_chunk.h"

namespace shardlab {

template <class T>
class ExpertParallel : public WrappedHooks<T> {
 public:
  // inner: the other seams (null: the identity). trace (may be null): the all-to-alls' spans.
  ExpertParallel(Communicator& ep, ChunkHooks<T>* inner, MemoryLedger& ledger, Trace* trace = nullptr);

  ExpertRows counts(const int* per_expert, int E) override;
  void to_experts(const T* slot_rows, int n, T* expert_rows, const ExpertRows& rows, int C) override;
  void to_slots(const T* expert_rows, const ExpertRows& rows, T* slot_rows, int n, int C) override;

  // What the exchanges moved since the run began, from the routing (not from the comm ledger, which `plan --ledger`
  // checks against it): per ep rank (this rank's own included), the rows sent to it and received from it by the
  // dispatch-direction all-to-alls (forward's dispatch, backward's output gradients) and by the combine-direction
  // ones; and how many exchanges of each kind ran. Evaluation's are not counted (count_moves(false)).
  struct Moved {
    std::vector<double> dispatch_sent, dispatch_received, combine_sent, combine_received;
    double counts = 0, dispatches = 0, combines = 0;
  };
  const Moved& moved() const { return moved_; }
  void count_moves(bool on) { counting_ = on; }

  // Every other seam: the wrapped hooks' (WrappedHooks).

 private:
  Communicator& ep_;
  MemoryLedger& ledger_;
  Trace no_trace_;
  Trace* trace_;
  Moved moved_;
  bool counting_ = true;
};

}  // namespace shardlab
