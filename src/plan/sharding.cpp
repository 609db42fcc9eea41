// plan/sharding.cpp — shard group, padding and per-rank model-state bytes for DP / ZeRO / FSDP.
// See sharding.h for the rules and what is left out.
#include "plan/sharding.h"

namespace shardlab::plan {

namespace {
// "4Ψ", "12Ψ/N", "Ψ" — a coefficient times Ψ, optionally over a divisor.
std::string term(std::uint64_t coeff, const char* over) {
  return (coeff == 1 ? std::string() : std::to_string(coeff)) + "Ψ" + over;
}
}  // namespace

std::string layout_error(const Layout& l) {
  if (l.dp < 1) return "the data-parallel size must be at least 1";
  if (l.accum < 1) return "micro-batches per step must be at least 1";
  if (l.strategy == Strategy::hybrid && l.ranks_per_node < 1) return "FSDP hybrid needs the ranks per node";
  if (l.ranks_per_node > 0 && l.dp % l.ranks_per_node != 0)  // as the trainer: nodes of K consecutive ranks
    return "ranks per node (" + std::to_string(l.ranks_per_node) + ") must divide the data-parallel size (" +
           std::to_string(l.dp) + ")";
  return "";
}

std::uint64_t ranks_per_node(const Layout& l) { return l.ranks_per_node ? l.ranks_per_node : l.dp; }
std::uint64_t num_nodes(const Layout& l) {
  const std::uint64_t k = ranks_per_node(l);
  return (l.dp + k - 1) / k;
}
std::uint64_t node_of(const Layout& l, std::uint64_t rank) { return rank / ranks_per_node(l); }

ShardLayout shard_layout(const Layout& l, std::uint64_t psi) {
  const std::uint64_t group = l.strategy == Strategy::hybrid ? l.ranks_per_node : l.dp;  // hybrid: shard inside a node
  return ShardLayout(psi, group ? static_cast<int>(group) : 1, 0);  // invalid layout: see layout_error
}

PerCategory per_rank_model_state_bytes(const Recipe& r, std::uint64_t psi, const Layout& l) {
  // claim C12: a sharded category holds one shard S, a replicated one the whole padded buffer.
  const PerCategory per = bytes_per_param(r);
  const ShardLayout sh = shard_layout(l, psi);
  PerCategory out;
  for (int i = 0; i < kNumCategories; ++i)
    out.v[i] = per.v[i] * (is_sharded(l.strategy, category_at(i)) ? sh.shard() : sh.padded());
  return out;
}

PerCategory model_state_floor_bytes(const Recipe& r, std::uint64_t psi, Strategy s) {
  // claim C13: as N → ∞ the shards vanish; what stays is what the strategy replicates.
  const PerCategory per = bytes_per_param(r);
  PerCategory out;
  for (int i = 0; i < kNumCategories; ++i) out.v[i] = is_sharded(s, category_at(i)) ? 0 : per.v[i] * psi;
  return out;
}

std::string model_state_formula(const Recipe& r, Strategy s) {
  const PerCategory per = bytes_per_param(r);
  std::uint64_t whole = 0, split = 0;
  for (int i = 0; i < kNumCategories; ++i) (is_sharded(s, category_at(i)) ? split : whole) += per.v[i];
  const char* over = s == Strategy::hybrid ? "/K" : "/N";
  if (split == 0) return term(whole, "");
  if (whole == 0) return term(split, over);
  return term(whole, "") + " + " + term(split, over);
}

}  // namespace shardlab::plan
