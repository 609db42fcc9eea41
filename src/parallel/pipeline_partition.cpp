// Layers over pipeline stages and their model chunks (see pipeline_partition.h).
#include "parallel/pipeline_partition.h"

#include <cstdint>
#include <cstdlib>

#include "parallel/schedule.h"

namespace shardlab {

std::string parse_layer_counts(const std::string& s, std::vector<int>* out) {
  const std::string why = "expects positive layer counts separated by commas, e.g. 3,5; got '" + s + "'";
  std::vector<int> v;
  size_t at = 0;
  while (!s.empty() && at <= s.size()) {
    const size_t comma = s.find(',', at);
    const std::string item = s.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    // Digits only: strtol alone would also take " 2", "+2" and "0x2".
    if (item.empty() || item.size() > 7 || item.find_first_not_of("0123456789") != std::string::npos) return why;
    const long n = std::strtol(item.c_str(), nullptr, 10);
    if (n < 1 || n > 1000000) return why;
    v.push_back(static_cast<int>(n));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  *out = std::move(v);
  return "";
}

std::string layer_counts_text(const std::vector<int>& n) {
  std::string s;
  for (int x : n) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

std::vector<bool> PipelinePartition::held_units(int stage) const {
  const int layers = chunks.back().end_block;
  std::vector<bool> held(layers + 2, false);
  for (int c = 0; c < virtual_stages; ++c) {
    const ChunkSpec& k = chunk(stage, c);
    for (int l = k.first_block; l < k.end_block; ++l) held[l + 1] = true;
    if (k.embedding) held[0] = true;
    if (k.head) held[layers + 1] = true;
  }
  return held;
}

std::string pipeline_problem(int layers, int pp, int v, ScheduleKind kind, const std::vector<int>& n) {
  const std::string P = std::to_string(pp), V = std::to_string(v), L = std::to_string(layers);
  if (pp < 1) return "--pp must be at least 1";
  if (v < 1) return "--virtual-stages must be at least 1";
  // The schedule's own rules (stages and chunks; any m that is a multiple of pp is fine here).
  if (std::string why = schedule_shape_problem(kind, pp, pp, v); !why.empty()) return why;
  const int64_t chunks = int64_t(pp) * v;  // in 64 bits: --pp and --virtual-stages may each be near 2^31
  if (chunks > layers)
    return "--pp " + P + (v > 1 ? " × --virtual-stages " + V : "") + " = " + std::to_string(chunks) +
           " model chunks, but the model has " + L + " layers (every chunk holds at least one)";
  if (kind == ScheduleKind::interleaved && layers % chunks != 0)
    return "--schedule interleaved needs --layers divisible by pp × virtual-stages = " + std::to_string(chunks) +
           " (the model has " + L + ")";
  if (!n.empty()) {
    if (v > 1) return "--pp-layers sets the layers of each stage; it does not go with --virtual-stages";
    int64_t sum = 0;  // in 64 bits: thousands of counts of up to 10^6
    for (int x : n) sum += x;
    if (static_cast<int>(n.size()) != pp || sum != layers)
      return "--pp-layers " + layer_counts_text(n) + " gives " + std::to_string(n.size()) +
             (n.size() == 1 ? " stage" : " stages") + " and " + std::to_string(sum) + " layers; --pp " + P +
             " and --layers " + L + " need " + P + (pp == 1 ? " count" : " counts") + " adding to " + L;
  }
  return "";
}

PipelinePartition partition_layers(int layers, int pp, int v, const std::vector<int>& counts) {
  PipelinePartition p;
  p.stages = pp;
  p.virtual_stages = v;
  const int K = pp * v;
  std::vector<int> n = counts;
  if (n.empty())
    for (int k = 0; k < K; ++k) n.push_back(layers / K + (k < layers % K ? 1 : 0));
  int first = 0;
  for (int k = 0; k < K; ++k) {
    p.chunks.push_back(ChunkSpec{first, first + n[k], k == 0, k == K - 1});
    first += n[k];
  }
  return p;
}

}  // namespace shardlab
