// check/ledger_read.h — reading a trainer's ledger.json: field readers that throw one sentence naming the
// field, the recipe and the activation shape it records, and the measured sums of its comm ledgers (ring
// bytes on dp and on tp by purpose, point-to-point bytes on pp). The checks themselves: ledger_check.h.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "plan/activation_items.h"
#include "plan/comm_volume.h"
#include "plan/state_bytes.h"
#include "plan/tp_bytes.h"

namespace shardlab::plan {

using Json = nlohmann::json;

const Json& need(const Json& obj, const char* key, const std::string& where);
std::uint64_t need_u64(const Json& obj, const char* key, const std::string& where);
// A count that must lie in [lo, hi] (a world's size, stages, chunks), checked before anything narrows it.
std::uint64_t need_in(const Json& obj, const char* key, const std::string& where, std::uint64_t lo, std::uint64_t hi);
std::string need_string(const Json& obj, const char* key, const std::string& where);
// A word parsed with parse(word, &value) (a string, or the number's text), else "unknown where.key".
template <class T, class P>
T need_word(const Json& obj, const char* key, const std::string& where, P parse) {
  T value{};
  const Json& v = need(obj, key, where);
  const std::string s = v.is_string() ? v.get<std::string>() : v.dump();
  if (!parse(s, &value)) throw std::runtime_error("unknown " + where + "." + key + " \"" + s + "\"");
  return value;
}

Recipe read_recipe(const Json& model);                 // model.{optimizer, dtype, mixed, …}
ActivationShape read_activation_shape(const Json& a);  // model.activations

// One rank's measured bytes over the whole run: ring reduce_scatter / all_gather / all_reduce on dp, by op;
// ring collectives on tp, by purpose; point-to-point sends on pp.
StepComm measured_dp_ring(const Json& rank, const std::string& where);
TpStepBytes measured_tp_ring(const Json& rank, const std::string& where);
std::uint64_t measured_pp_sent(const Json& rank, const std::string& where);

}  // namespace shardlab::plan
