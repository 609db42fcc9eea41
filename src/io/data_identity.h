// Which data a run trained on, so that a resume cannot train on other data without a word: a data file is
// known by its absolute path, its size and its SHA-256. Checkpoints record it (meta.json "data"); --resume
// compares the file it is given with it (train/resume.cpp). Computed once per file and process (the file is
// read once more to hash it, or hashed from bytes already read).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace shardlab {

struct DataIdentity {
  std::string path;  // absolute
  uint64_t bytes = 0;
  std::string sha256;
  nlohmann::json to_json() const;
  static DataIdentity from_json(const nlohmann::json& j);  // empty sha256 when j holds none
  std::string describe() const;                            // "'/abs/path' (N bytes, sha256 1a2b3c4d…)"
};

// bytes: the file's contents when already read (TextData), else it is read here. Throws std::runtime_error
// when the file cannot be read.
DataIdentity identify_data(const std::string& path, const std::vector<uint8_t>* bytes = nullptr);

}  // namespace shardlab
