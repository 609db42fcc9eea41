// report/search_report.h — what `shardlab plan --search` prints: the model, batch, rates and every default in a
// header, how the step time is modelled (placement and overlap), the counts of layouts enumerated / refused by
// divisibility / over memory, the ranked table (each term of the step time its own column), and the chapter's rule
// of thumb beside it with its rank and one line on why the best differs (claims C26, C29). Also the whole ranking as
// JSON (--json FILE) for a later calibration against measured runs.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "plan/search_ranking.h"

namespace shardlab::plan {

// What the search was asked, and which of its values are defaults (printed as such).
struct SearchRequest {
  SearchModel model;
  SearchSpace space;
  StepRates rates;
  double gpu_memory_gb = 80;
  std::uint64_t top = 15;
  std::vector<std::string> defaults;  // the flags left at their default values, e.g. "--gpu-tflops"
  std::string rates_file;             // --rates FILE: the rates measured by `plan --calibrate` (else empty)
  bool is_default(const std::string& flag) const;
};

void print_search(std::ostream& out, const SearchRequest& q, const SearchResult& r);
nlohmann::json search_json(const SearchRequest& q, const SearchResult& r);

// One line: why the best layout beats the rule of thumb (the term it saves most on), or that they are the same.
std::string why_best_differs(const SearchRow& best, const SearchRow& rule);

}  // namespace shardlab::plan
