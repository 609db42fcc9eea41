// Training text: any file, bytes as tokens. The last 10% is held out for validation.
// Batches are layout-independent: sample k of step n starts at
//   offset = rng(seed, "data", n).below(k, train_bytes - T)
// so a data-parallel rank, a micro-batch or a resumed run draws exactly the samples it owns
// with no shared cursor (the "data position" of a checkpoint is just the step).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace shardlab {

class TextData {
 public:
  // Throws std::runtime_error with one clear sentence: missing/empty file, too short for seq,
  // bytes beyond the vocabulary.
  TextData(const std::string& path, int seq, int vocab);
  // inputs/targets (count, T) for global samples [first, first + count) of step `step`.
  void train_batch(uint64_t seed, uint64_t step, uint64_t first, int count, int32_t* inputs, int32_t* targets) const;
  // Evaluation windows: non-overlapping, in file order; window w of a part starting at byte s
  // covers [s + w·T, s + w·T + T + 1), inside the part. Part: the validation split (training's
  // validation loss, `eval`'s default), the train split, or the whole file (`eval --split`).
  enum class Part { validation, train, whole };
  int windows(Part part) const;
  void window_batch(Part part, int first_window, int count, int32_t* inputs, int32_t* targets) const;
  size_t train_bytes() const { return split_; }
  size_t bytes(Part part) const;
  size_t val_bytes() const { return bytes_.size() - split_; }
  const std::string& path() const { return path_; }
  int seq() const { return seq_; }

 private:
  std::string path_;
  std::vector<uint8_t> bytes_;
  size_t split_ = 0;  // train = [0, split), validation = [split, end)
  int seq_;
};

}  // namespace shardlab
