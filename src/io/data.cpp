// Text data loading, the train/validation split and layout-independent sampling (see data.h).
#include "io/data.h"

#include <iterator>
#include <stdexcept>

#include "core/paths.h"
#include "core/rng.h"
#include "io/data_identity.h"

namespace shardlab {

TextData::TextData(const std::string& path, int seq, int vocab) : path_(path), seq_(seq) {
  if (std::string why = input_file_problem(path); !why.empty()) throw std::runtime_error("--data: " + why);
  bytes_ = read_file_bytes(path);
  if (bytes_.empty()) throw std::runtime_error("data file '" + path + "' is empty");
  identify_data(path, &bytes_);  // what checkpoints will record: these very bytes
  split_ = bytes_.size() - bytes_.size() / 10;
  const size_t need = static_cast<size_t>(seq) + 2;
  if (split_ < need || bytes_.size() - split_ < need)
    throw std::runtime_error("data file '" + path + "' has " + std::to_string(bytes_.size()) +
                             " bytes: too short for --seq " + std::to_string(seq) + " (needs at least " +
                             std::to_string(need * 10) +
                             " so that both the 90% train and the 10% validation part hold a window of seq+1 bytes)");
  if (vocab < 256)
    for (size_t i = 0; i < bytes_.size(); ++i)
      if (bytes_[i] >= vocab)
        throw std::runtime_error("data file '" + path + "' has byte value " + std::to_string(bytes_[i]) +
                                 " at offset " + std::to_string(i) + ", outside --vocab " + std::to_string(vocab));
}

void TextData::train_batch(uint64_t seed, uint64_t step, uint64_t first, int count, int32_t* inputs,
                           int32_t* targets) const {
  RngStream rng = rng_stream(seed, "data", step);
  const uint64_t starts = split_ - seq_;  // a window needs T+1 bytes inside the train part
  for (int s = 0; s < count; ++s) {
    size_t off = rng.below(first + s, starts);
    for (int t = 0; t < seq_; ++t) {
      inputs[s * seq_ + t] = bytes_[off + t];
      targets[s * seq_ + t] = bytes_[off + t + 1];
    }
  }
}

size_t TextData::bytes(Part part) const {
  return part == Part::whole ? bytes_.size() : part == Part::train ? train_bytes() : val_bytes();
}

int TextData::windows(Part part) const { return static_cast<int>((bytes(part) - 1) / seq_); }

void TextData::window_batch(Part part, int first_window, int count, int32_t* inputs, int32_t* targets) const {
  const size_t start = part == Part::validation ? split_ : 0;
  for (int s = 0; s < count; ++s) {
    size_t off = start + static_cast<size_t>(first_window + s) * seq_;
    for (int t = 0; t < seq_; ++t) {
      inputs[s * seq_ + t] = bytes_[off + t];
      targets[s * seq_ + t] = bytes_[off + t + 1];
    }
  }
}

}  // namespace shardlab
