// The one-line messages shardlab prints about a problem (errors and warnings), in one place, so that every value
// they quote is shown alike, whichever flag, file or check it came from: a value longer than kShownBytes — a
// 100 kB --data path, a flag given garbage — is shown by its first and last bytes around "…" (its start says what
// it is, its end which file), never whole. A value is a run of the message between spaces. Leaves out: the
// sentence itself (each check words its own) and which rank prints (the caller's: rank 0, or the rank at fault).
#pragma once
#include <cstddef>
#include <string>

namespace shardlab {

constexpr size_t kShownBytes = 160;  // longer values are shortened to about this many bytes

// message with every run of more than kShownBytes non-space bytes shortened to its two ends around "…" (cut
// between UTF-8 characters, never inside one).
std::string shorten_values(const std::string& message);

// "PREFIX: KIND: MESSAGE\n" on stderr, values shortened. KIND: "error", "warning", "error (rank 3)", …
void print_line(const std::string& prefix, const std::string& kind, const std::string& message);

}  // namespace shardlab
