// SHA-256 (FIPS 180-4) of a memory buffer or a whole file, as 64 lowercase hex digits.
// Used by checkpoints to detect corrupted or truncated files. Leaves out: HMAC, other digests,
// and any speed tricks (SHA-NI, SIMD) — a portable one-block-at-a-time implementation is plenty
// for checkpoint-sized files.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace shardlab {

// Incremental hasher: update() any number of times, then hex_digest() once.
class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t n);
  std::string hex_digest();  // finalises; the object must not be updated afterwards

 private:
  void compress(const uint8_t block[64]);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_bytes_ = 0;
  bool finished_ = false;
};

std::string sha256_hex(const void* data, size_t n);
std::string sha256_hex_of_file(const std::string& path);  // throws std::runtime_error if unreadable

}  // namespace shardlab
