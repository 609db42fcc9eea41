// Memory ledger bookkeeping (see ledger.h).
#include "core/ledger.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace shardlab {

const char* mem_name(Mem c) {
  switch (c) {
    case Mem::param: return "param";
    case Mem::grad: return "grad";
    case Mem::master: return "master";
    case Mem::adam_m: return "adam_m";
    case Mem::adam_v: return "adam_v";
    case Mem::momentum: return "momentum";
    case Mem::activation: return "activation";
    case Mem::comm_buffer: return "comm_buffer";
    case Mem::workspace: return "workspace";
    default: return "?";
  }
}

bool MemoryLedger::allocate(Mem c, size_t bytes, const char* item) {
  const bool itemised = item && !items_paused_;
  if (itemised) {
    LedgerItem& it = items_[item];
    it.current += bytes;
    if (it.current > it.peak) it.peak = it.current;
    if (it.allocations && bytes != it.last_bytes) it.uniform = false;
    ++it.allocations;
    it.bytes_allocated += bytes;
    it.last_bytes = bytes;
  }
  int i = idx(c);
  current_[i] += bytes;
  if (current_[i] > peak_[i]) peak_[i] = current_[i];
  total_current_ += bytes;
  if (total_current_ > total_peak_) total_peak_ = total_current_;
  return itemised;
}

void MemoryLedger::release(Mem c, size_t bytes, const char* item) noexcept {
  if (item) {
    auto it = items_.find(item);
    if (it != items_.end()) it->second.current -= std::min(bytes, it->second.current);
  }
  int i = idx(c);
  if (bytes > current_[i]) {
    ++mismatched_;
    bytes = current_[i];
  }
  current_[i] -= bytes;
  total_current_ -= bytes;
}

size_t MemoryLedger::model_state_bytes() const {
  return current(Mem::param) + current(Mem::grad) + current(Mem::master) + current(Mem::adam_m) + current(Mem::adam_v) +
         current(Mem::momentum);
}

void MemoryLedger::reset_peaks() {
  peak_ = current_;
  total_peak_ = total_current_;
  for (auto& [name, it] : items_) it.peak = it.current;
}

nlohmann::json MemoryLedger::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  for (int i = 0; i < kMemCategories; ++i)
    j[mem_name(static_cast<Mem>(i))] = {{"current", current_[i]}, {"peak", peak_[i]}};
  j["total"] = {{"current", total_current_}, {"peak", total_peak_}};
  if (mismatched_) j["mismatched_releases"] = mismatched_;
  if (!items_.empty()) {
    nlohmann::json items = nlohmann::json::object();
    for (const auto& [name, it] : items_) {
      items[name] = {{"current", it.current},
                     {"peak", it.peak},
                     {"allocations", it.allocations},
                     {"bytes_allocated", it.bytes_allocated}};
      if (it.uniform) items[name]["bytes_each"] = it.last_bytes;
    }
    j["items"] = items;
  }
  return j;
}

}  // namespace shardlab
