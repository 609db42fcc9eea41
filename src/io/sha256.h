// SHA-256 of a memory buffer or a whole file, as 64 lowercase hex digits, through OpenSSL's libcrypto
// (EVP digest API). Checkpoints record one per file so a load refuses corrupted or truncated data.
// Leaves out: other digests, HMAC.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX

namespace shardlab {

// Incremental hasher: update() any number of times, then hex_digest() once.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const void* data, size_t n);
  std::string hex_digest();  // finalises; the object must not be updated afterwards

 private:
  evp_md_ctx_st* ctx_;
};

std::string sha256_hex(const void* data, size_t n);
std::string sha256_hex_of_file(const std::string& path);  // throws std::runtime_error if unreadable

}  // namespace shardlab
