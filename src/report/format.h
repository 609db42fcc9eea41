// report/format.h — how numbers are written for people, everywhere: thousands separators, bytes with
// one unit per table (1 GB = 1e9 bytes, as in the chapter), fixed-digit numbers, durations, and an
// aligned text table whose width counts UTF-8 code points (Ψ, ×, ² are one column each).
//
// Leaves out: binary units (GiB), locale-aware formatting, terminal width and colour.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace shardlab {

std::string commas(std::uint64_t x);  // 1234567 → "1,234,567"

// One unit per table, picked from its largest number, so columns compare at a glance.
struct Unit {
  const char* name;
  long double scale;
};
Unit unit_for(std::uint64_t max_bytes);            // GB | MB | kB | B
std::string fixed(long double x, int digits);      // std::fixed with `digits` decimals
std::string in_unit(std::uint64_t bytes, Unit u);  // "14.000 GB" (bytes: no decimals)
std::string shortest(long double x);               // 80 → "80", 2.5 → "2.5"
std::string seconds_text(long double s);           // 0.0933 → "93.3 ms", 1.12 → "1.12 s", µs, ns
std::string format_bytes(double bytes);            // "1.23 MB": its own unit (1 MB = 1e6 bytes)
std::string format_duration(double sec);           // "1:05" or "1:02:03" (a clock)

// Aligned text table: first column left-aligned, the rest right-aligned; rule() adds a line.
class Table {
 public:
  // The first `left` columns are left-aligned (names, words), the rest right-aligned (numbers).
  explicit Table(std::vector<std::string> header, size_t left = 1);
  void row(std::vector<std::string> r);
  void rule();
  void print(std::ostream& out) const;

 private:
  std::vector<std::vector<std::string>> rows_;  // header, rule, then rows (empty = a rule)
  size_t left_;
};

}  // namespace shardlab
