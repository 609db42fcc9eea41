// One-line messages with long values shortened (see error_line.h).
#include "core/error_line.h"

#include <algorithm>
#include <cstdio>

namespace shardlab {

namespace {

constexpr size_t kHead = 90, kTail = 60;  // of a shortened value: its start (what it is) and its end (which file)

bool continues_character(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// The value's first ~kHead and last ~kTail bytes around "…", cut at character boundaries.
std::string shortened(const std::string& v) {
  size_t head = kHead, tail = v.size() - kTail;
  while (head > 0 && continues_character(v[head])) --head;
  while (tail < v.size() && continues_character(v[tail])) ++tail;
  return v.substr(0, head) + "…" + v.substr(tail);
}

}  // namespace

std::string shorten_values(const std::string& message) {
  std::string out;
  size_t at = 0;
  while (at < message.size()) {
    const size_t end = std::min(message.find(' ', at), message.size());
    const std::string word = message.substr(at, end - at);
    out += word.size() > kShownBytes ? shortened(word) : word;
    if (end < message.size()) out += ' ';
    at = end + 1;
  }
  return out;
}

void print_line(const std::string& prefix, const std::string& kind, const std::string& message) {
  std::fprintf(stderr, "%s: %s: %s\n", prefix.c_str(), kind.c_str(), shorten_values(message).c_str());
}

}  // namespace shardlab
