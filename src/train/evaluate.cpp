// Evaluation over fixed windows (see evaluate.h).
#include "train/evaluate.h"

#include <algorithm>
#include <vector>

namespace shardlab {

template <class T>
double evaluate_windows(ModelChunk<T>& model, UnitAccess<T>& weights, const TextData& data, int max_windows,
                        TextData::Part part, Progress* progress) {
  int n = data.windows(part);
  if (max_windows > 0) n = std::min(n, max_windows);
  const int B = model.capacity(), Tn = static_cast<int>(data.seq());
  std::vector<int32_t> in(static_cast<size_t>(B) * Tn), tg(static_cast<size_t>(B) * Tn);
  double sum = 0.0;
  constexpr int kEvalId = -1;  // never a training micro-batch's id
  for (int w = 0; w < n; w += B) {
    int count = std::min(B, n - w);
    data.window_batch(part, w, count, in.data(), tg.data());
    sum += model.forward(MicroBatch{kEvalId, count, in.data(), tg.data(), {}, false}, weights);
    model.release(kEvalId);
    if (progress) progress->step(w / B + 1, sum / (double(w + count) * Tn), {});
  }
  return sum / (double(n) * Tn);
}

template <class T>
double evaluate_pipeline(PipelineStage<T>& stage, DataParallel<T>& engine, const PipelinePartition& part, int capacity,
                         const TextData& data, int max_windows) {
  int n = data.windows(TextData::Part::validation);
  if (max_windows > 0) n = std::min(n, max_windows);
  const int batches = (n + capacity - 1) / capacity, Tn = static_cast<int>(data.seq());
  // In passes: one pass runs at most as many micro-batches as the pipeline's tags can tell apart
  // (kMaxPipelineSlots, schedule.h) — and holds only that pass's windows.
  const int chunks = part.stages * part.virtual_stages;
  const int per_pass = std::max(1, kMaxPipelineSlots / chunks);
  double local = 0.0;
  for (int first_batch = 0; first_batch < batches; first_batch += per_pass) {
    const int m = std::min(per_pass, batches - first_batch);
    MicroBatchSource source;
    source.samples = [&](int i) { return std::min(capacity, n - (first_batch + i) * capacity); };
    source.draw = [&](int i, std::vector<int32_t>& in, std::vector<int32_t>& tg) {
      const int first = (first_batch + i) * capacity, count = std::min(capacity, n - first);
      in.resize(size_t(count) * Tn);
      tg.resize(in.size());
      data.window_batch(TextData::Part::validation, first, count, in.data(), tg.data());
      return MicroBatch{i, count, in.data(), tg.data(), {}, false};
    };
    const auto actions = forward_only_schedule(part.stages, m, part.virtual_stages);
    local += stage.run(actions[stage.stage()], engine, m, T(1), source, false);
  }
  const double total = engine.exact() ? engine.sums().exact_over_slices_and_stages(stage.take_loss_terms())
                                      : engine.sums().over_stages(engine.sums().over_slices(local));
  return total / (double(n) * Tn);
}

template double evaluate_windows<float>(ModelChunk<float>&, UnitAccess<float>&, const TextData&, int, TextData::Part,
                                        Progress*);
template double evaluate_windows<double>(ModelChunk<double>&, UnitAccess<double>&, const TextData&, int, TextData::Part,
                                         Progress*);
template double evaluate_pipeline<float>(PipelineStage<float>&, DataParallel<float>&, const PipelinePartition&, int,
                                         const TextData&, int);
template double evaluate_pipeline<double>(PipelineStage<double>&, DataParallel<double>&, const PipelinePartition&, int,
                                          const TextData&, int);

}  // namespace shardlab
