// Sums across the grid's axes in their fixed order (see grid_sums.h).
#include "parallel/grid_sums.h"

#include <cmath>

namespace shardlab {

namespace {
double sum_in_rank_order(Communicator& c, double local) {
  double total = 0.0;
  for (double v : c.all_gather_value(local)) total += v;
  return total;
}
}  // namespace

double GridSums::over_slices(double local) const {
  const double sample_part = sequence_parallel_ ? sum_in_rank_order(*tp_, local) : local;
  return cp_ ? sum_in_rank_order(*cp_, sample_part) : sample_part;
}

double GridSums::over_stages(double local) const { return pp_ ? sum_in_rank_order(*pp_, local) : local; }

double GridSums::over_ranks(double local) const {
  const double stages = over_stages(over_slices(local));
  return sum_in_rank_order(*dp_, ep_ ? sum_in_rank_order(*ep_, stages) : stages);  // the same sum everywhere
}

std::vector<double> GridSums::over_ranks(std::vector<double> v) const {
  auto add_over = [&](Communicator* group) {  // rank order, as the scalar sums
    if (!group || group->size() == 1) return;
    const std::vector<double> all = group->all_gather_values(v);
    for (size_t i = 0; i < v.size(); ++i) {
      v[i] = 0.0;
      for (int r = 0; r < group->size(); ++r) v[i] += all[size_t(r) * v.size() + i];
    }
  };
  if (sequence_parallel_) add_over(tp_);
  add_over(cp_);
  add_over(pp_);
  add_over(ep_);
  add_over(dp_);
  return v;
}

namespace {
void merge_over(Communicator* c, ExactSum& s) {
  if (!c || c->size() == 1) return;
  Communicator::Purpose tag(*c, "exact_loss");
  c->all_reduce(&s, 1);
}
}  // namespace

double GridSums::exact_over_slices_and_stages(ExactSum s) const {
  merge_over(sequence_parallel_ ? tp_ : nullptr, s);  // without SP every tp rank holds the whole value: once
  merge_over(cp_, s);
  merge_over(pp_, s);
  return exact_value(s);
}

double GridSums::exact_over_ranks(ExactSum s) const {
  merge_over(sequence_parallel_ ? tp_ : nullptr, s);
  for (Communicator* c : {cp_, pp_, ep_, dp_}) merge_over(c, s);
  return exact_value(s);
}

double GridSums::norm_of_units(std::vector<double> parts) const {
  const size_t U = parts.size();
  auto add_over = [&](Communicator* group) {
    if (!group || group->size() == 1) return;
    const std::vector<double> all = group->all_gather_values(parts);
    for (size_t u = 0; u < U; ++u) {
      parts[u] = 0.0;
      for (int r = 0; r < group->size(); ++r) parts[u] += all[size_t(r) * U + u];
    }
  };
  add_over(tp_);
  add_over(shard_);
  if (norm_over_ep_) add_over(ep_);
  add_over(pp_);  // a unit lives on one stage: the other stages add exact zeros
  double total = 0.0;
  for (double p : parts) total += p;
  return std::sqrt(total);
}

}  // namespace shardlab
