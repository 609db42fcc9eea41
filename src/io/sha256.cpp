// SHA-256 through OpenSSL's EVP digest API (see sha256.h).
#include "io/sha256.h"

#include <openssl/evp.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace shardlab {

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_ || EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("sha256: OpenSSL cannot start a digest");
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_); }

void Sha256::update(const void* data, size_t n) {
  if (n && EVP_DigestUpdate(ctx_, data, n) != 1) throw std::runtime_error("sha256: OpenSSL digest update failed");
}

std::string Sha256::hex_digest() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx_, md, &len) != 1) throw std::runtime_error("sha256: OpenSSL digest failed");
  static const char* hex = "0123456789abcdef";
  std::string out(2 * len, '0');
  for (unsigned int i = 0; i < len; ++i) {
    out[2 * i] = hex[md[i] >> 4];
    out[2 * i + 1] = hex[md[i] & 15];
  }
  return out;
}

std::string sha256_hex(const void* data, size_t n) {
  Sha256 s;
  s.update(data, n);
  return s.hex_digest();
}

std::string sha256_hex_of_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error("sha256 of " + path + ": cannot open (" + std::strerror(errno) + ")");
  Sha256 s;
  std::vector<uint8_t> chunk(1 << 20);
  size_t got;
  while ((got = std::fread(chunk.data(), 1, chunk.size(), f)) > 0) s.update(chunk.data(), got);
  bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) throw std::runtime_error("sha256 of " + path + ": read error");
  return s.hex_digest();
}

}  // namespace shardlab
