// Expert parallelism's all-to-alls (see expert_parallel.h).
#include "parallel/expert_parallel.h"

#include "model/moe_dispatch.h"

namespace shardlab {

template <class T>
ExpertParallel<T>::ExpertParallel(Communicator& ep, ChunkHooks<T>* inner, MemoryLedger& ledger, Trace* trace)
    : WrappedHooks<T>(inner), ep_(ep), ledger_(ledger), no_trace_(false), trace_(trace ? trace : &no_trace_) {
  ep_.set_memory_ledger(&ledger);
  for (auto* v : {&moved_.dispatch_sent, &moved_.dispatch_received, &moved_.combine_sent, &moved_.combine_received})
    v->assign(ep.size(), 0.0);
}

template <class T>
ExpertRows ExpertParallel<T>::counts(const int* per_expert, int E) {
  const int P = ep_.size(), El = E / P;
  ExpertRows rows{P, El, std::vector<int>(size_t(P) * El), rows_per_rank(per_expert, E, P)};
  std::vector<int32_t> mine(per_expert, per_expert + E);
  Communicator::Purpose purpose(ep_, "moe_counts");
  Trace::Span span(*trace_, "moe counts", "comm");
  ep_.all_to_all_v(mine.data(), std::vector<size_t>(P, El), rows.count.data(), std::vector<size_t>(P, El));
  if (counting_) moved_.counts += 1;
  return rows;
}

namespace {
std::vector<size_t> scaled(const std::vector<int>& rows, int C) {  // rows → elements
  std::vector<size_t> out(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) out[i] = size_t(rows[i]) * C;
  return out;
}
}  // namespace

template <class T>
void ExpertParallel<T>::to_experts(const T* slot_rows, int n, T* expert_rows, const ExpertRows& rows, int C) {
  Buffer<T> arrived(ledger_, Mem::workspace, size_t(rows.rows()) * C, 0, nullptr, false);
  {
    Communicator::Purpose purpose(ep_, "moe_dispatch");
    Trace::Span span(*trace_, "moe dispatch", "comm");
    ep_.all_to_all_v(slot_rows, scaled(rows.sent, C), arrived.data(), scaled(rows_from_sources(rows), C));
  }
  arrival_to_experts(expert_rows, arrived.data(), rows, C);
  if (!counting_) return;
  const std::vector<int> from = rows_from_sources(rows);
  for (int j = 0; j < rows.sources; ++j)
    moved_.dispatch_sent[j] += rows.sent[j], moved_.dispatch_received[j] += from[j];
  moved_.dispatches += 1;
}

template <class T>
void ExpertParallel<T>::to_slots(const T* expert_rows, const ExpertRows& rows, T* slot_rows, int n, int C) {
  Buffer<T> leaving(ledger_, Mem::workspace, size_t(rows.rows()) * C, 0, nullptr, false);
  experts_to_arrival(leaving.data(), expert_rows, rows, C);
  Communicator::Purpose purpose(ep_, "moe_combine");
  Trace::Span span(*trace_, "moe combine", "comm");  // waits for the slowest rank's experts: C25's idle time
  ep_.all_to_all_v(leaving.data(), scaled(rows_from_sources(rows), C), slot_rows, scaled(rows.sent, C));
  if (!counting_) return;
  const std::vector<int> from = rows_from_sources(rows);
  for (int j = 0; j < rows.sources; ++j) moved_.combine_sent[j] += from[j], moved_.combine_received[j] += rows.sent[j];
  moved_.combines += 1;
}

template class ExpertParallel<float>;
template class ExpertParallel<double>;

}  // namespace shardlab
