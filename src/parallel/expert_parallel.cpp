// Expert parallelism's all-to-alls (see expert_parallel.h).
#include "parallel/expert_parallel.h"

#include <cstring>

namespace shardlab {

template <class T>
ExpertParallel<T>::ExpertParallel(Communicator& ep, ChunkHooks<T>* inner, MemoryLedger& ledger, Trace* trace)
    : ep_(ep),
      inner_(inner ? inner : &identity_),
      ledger_(ledger),
      no_trace_(false),
      trace_(trace ? trace : &no_trace_) {
  ep_.set_memory_ledger(&ledger);
}

template <class T>
ExpertRows ExpertParallel<T>::counts(const int* per_expert, int E) {
  const int P = ep_.size(), El = E / P;
  ExpertRows rows{P, El, std::vector<int>(size_t(P) * El), std::vector<int>(P, 0)};
  std::vector<int32_t> mine(per_expert, per_expert + E);
  for (int j = 0; j < P; ++j)
    for (int e = 0; e < El; ++e) rows.sent[j] += per_expert[j * El + e];
  Communicator::Purpose purpose(ep_, "moe_counts");
  Trace::Span span(*trace_, "moe counts", "comm");
  ep_.all_to_all_v(mine.data(), std::vector<size_t>(P, El), rows.count.data(), std::vector<size_t>(P, El));
  return rows;
}

namespace {
// Where source s's rows for local expert e sit in the source-major layout an all-to-all delivers (sources in
// order, each source's rows expert by expert) and in the expert-major layout the experts compute on.
struct Offsets {
  std::vector<size_t> by_source, by_expert;  // (sources, local)
  explicit Offsets(const ExpertRows& r) : by_source(r.count.size()), by_expert(r.count.size()) {
    size_t at = 0;
    for (int s = 0; s < r.sources; ++s)
      for (int e = 0; e < r.local; ++e) by_source[size_t(s) * r.local + e] = at, at += r.from(s, e);
    at = 0;
    for (int e = 0; e < r.local; ++e)
      for (int s = 0; s < r.sources; ++s) by_expert[size_t(s) * r.local + e] = at, at += r.from(s, e);
  }
};

std::vector<size_t> scaled(const std::vector<int>& rows, int C) {
  std::vector<size_t> out(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) out[i] = size_t(rows[i]) * C;
  return out;
}

std::vector<int> rows_from_each(const ExpertRows& r) {
  std::vector<int> out(r.sources, 0);
  for (int s = 0; s < r.sources; ++s)
    for (int e = 0; e < r.local; ++e) out[s] += r.from(s, e);
  return out;
}
}  // namespace

template <class T>
void ExpertParallel<T>::to_experts(const T* slot_rows, int n, T* expert_rows, const ExpertRows& rows, int C) {
  const Offsets at(rows);
  Buffer<T> arrived(ledger_, Mem::workspace, size_t(rows.rows()) * C, 0, nullptr, false);
  {
    Communicator::Purpose purpose(ep_, "moe_dispatch");
    Trace::Span span(*trace_, "moe dispatch", "comm");
    ep_.all_to_all_v(slot_rows, scaled(rows.sent, C), arrived.data(), scaled(rows_from_each(rows), C));
  }
  for (size_t i = 0; i < rows.count.size(); ++i)  // source-major → expert-major
    std::memcpy(static_cast<void*>(expert_rows + at.by_expert[i] * C), arrived.data() + at.by_source[i] * C,
                size_t(rows.count[i]) * C * sizeof(T));
}

template <class T>
void ExpertParallel<T>::to_slots(const T* expert_rows, const ExpertRows& rows, T* slot_rows, int n, int C) {
  const Offsets at(rows);
  Buffer<T> leaving(ledger_, Mem::workspace, size_t(rows.rows()) * C, 0, nullptr, false);
  for (size_t i = 0; i < rows.count.size(); ++i)  // expert-major → source-major
    std::memcpy(static_cast<void*>(leaving.data() + at.by_source[i] * C), expert_rows + at.by_expert[i] * C,
                size_t(rows.count[i]) * C * sizeof(T));
  Communicator::Purpose purpose(ep_, "moe_combine");
  Trace::Span span(*trace_, "moe combine", "comm");  // waits for the slowest rank's experts: C25's idle time
  ep_.all_to_all_v(leaving.data(), scaled(rows_from_each(rows), C), slot_rows, scaled(rows.sent, C));
}

template class ExpertParallel<float>;
template class ExpertParallel<double>;

}  // namespace shardlab
