// report/format.cpp — number formatting and the aligned text table (see format.h).
#include "report/format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <ostream>
#include <sstream>

namespace shardlab {

namespace {
size_t width(const std::string& s) {  // UTF-8 code points (Ψ, ×, ² count as one)
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}
}  // namespace

std::string commas(std::uint64_t x) {
  std::string s = std::to_string(x);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

Unit unit_for(std::uint64_t max_bytes) {
  if (max_bytes >= 1000000000ULL) return {"GB", 1e9L};
  if (max_bytes >= 1000000ULL) return {"MB", 1e6L};
  if (max_bytes >= 1000ULL) return {"kB", 1e3L};
  return {"B", 1.0L};
}

std::string fixed(long double x, int digits) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(digits) << x;
  return o.str();
}

std::string in_unit(std::uint64_t bytes, Unit u) {
  return fixed(static_cast<long double>(bytes) / u.scale, u.scale == 1.0L ? 0 : 3) + " " + u.name;
}

std::string shortest(long double x) {
  std::ostringstream o;
  o << static_cast<double>(x);
  return o.str();
}

std::string seconds_text(long double s) {
  if (s == 0) return "0 s";
  if (s >= 1) return fixed(s, s >= 100 ? 0 : 2) + " s";
  if (s >= 1e-3L) return fixed(s * 1e3L, 1) + " ms";
  if (s >= 1e-6L) return fixed(s * 1e6L, 1) + " µs";
  return fixed(s * 1e9L, 1) + " ns";
}

Table::Table(std::vector<std::string> header, size_t left) : rows_{std::move(header), {}}, left_(left) {}
void Table::row(std::vector<std::string> r) { rows_.push_back(std::move(r)); }
void Table::rule() { rows_.emplace_back(); }

void Table::print(std::ostream& out) const {
  std::vector<size_t> w(rows_[0].size(), 0);
  for (const auto& r : rows_)
    for (size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], width(r[i]));
  size_t total = 0;
  for (size_t x : w) total += x + 2;
  for (const auto& r : rows_) {
    std::string s = r.empty() ? "  " + std::string(total - 2, '-') : "";
    for (size_t i = 0; i < r.size(); ++i) {
      const size_t wi = i < w.size() ? w[i] : width(r[i]);
      const std::string pad(wi - width(r[i]), ' ');
      s += "  " + (i < left_ ? r[i] + pad : pad + r[i]);
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    out << s << "\n";
  }
}

std::string format_bytes(double b) {
  const char* unit[] = {"B", "kB", "MB", "GB", "TB", "PB", "EB"};
  int u = 0;
  while (std::fabs(b) >= 1000 && u < 6) {
    b /= 1000;
    ++u;
  }
  char s[32];
  std::snprintf(s, sizeof s, u == 0 ? "%.0f %s" : "%.2f %s", b, unit[u]);
  return s;
}

std::string format_duration(double sec) {
  long s = std::lround(std::max(0.0, sec));
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

}  // namespace shardlab
