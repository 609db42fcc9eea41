// An enum's spellings: one table per setting (the words the command line, config files, ledger.json and the
// reports use), and the two directions through it. A word is read once, where text enters (the command
// line, a config or checkpoint file), and from then on code compares enum values, never strings.
#pragma once
#include <cstddef>
#include <string>

namespace shardlab {

template <class E>
struct Spelling {
  const char* word;
  E value;
};

// Switches written as words (--overlap on|off).
inline constexpr Spelling<bool> kOnOffWords[] = {{"on", true}, {"off", false}};

// The word of v (the first entry with that value); "" when the table lacks it.
template <class E, size_t N>
const char* word_of(const Spelling<E> (&table)[N], const E& v) {
  for (const Spelling<E>& s : table)
    if (s.value == v) return s.word;
  return "";
}

// The value spelled `word`; false (out untouched) when no entry spells it.
template <class E, size_t N>
bool read_word(const Spelling<E> (&table)[N], const std::string& word, E* out) {
  for (const Spelling<E>& s : table)
    if (word == s.word) {
      *out = s.value;
      return true;
    }
  return false;
}

}  // namespace shardlab
