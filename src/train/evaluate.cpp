// Evaluation over fixed windows (see evaluate.h).
#include "train/evaluate.h"

#include <algorithm>
#include <vector>

namespace shardlab {

template <class T>
double evaluate_windows(ModelChunk<T>& model, UnitAccess<T>& weights, const TextData& data, int max_windows,
                        TextData::Part part, Progress* progress, const std::function<double(double)>& across_slices) {
  int n = data.windows(part);
  if (max_windows > 0) n = std::min(n, max_windows);
  const int B = model.capacity(), Tn = static_cast<int>(data.seq());
  std::vector<int32_t> in(static_cast<size_t>(B) * Tn), tg(static_cast<size_t>(B) * Tn);
  double sum = 0.0;
  constexpr int kEvalId = -1;  // never a training micro-batch's id
  for (int w = 0; w < n; w += B) {
    int count = std::min(B, n - w);
    data.window_batch(part, w, count, in.data(), tg.data());
    const double loss = model.forward(MicroBatch{kEvalId, count, in.data(), tg.data(), {}, false}, weights);
    sum += across_slices ? across_slices(loss) : loss;
    model.release(kEvalId);
    if (progress) progress->step(w / B + 1, sum / (double(w + count) * Tn), {});
  }
  return sum / (double(n) * Tn);
}

template double evaluate_windows<float>(ModelChunk<float>&, UnitAccess<float>&, const TextData&, int, TextData::Part,
                                        Progress*, const std::function<double(double)>&);
template double evaluate_windows<double>(ModelChunk<double>&, UnitAccess<double>&, const TextData&, int, TextData::Part,
                                         Progress*, const std::function<double(double)>&);

}  // namespace shardlab
