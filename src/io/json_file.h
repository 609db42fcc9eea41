// Reading a JSON file that a shardlab command wrote (ledger.json, trace.json, config.json): a file that is
// not JSON any more — cut short, binary, edited — is one sentence saying where it breaks, never a silent
// "nothing there". Leaves out: what the document must hold (each reader checks its own fields).
#pragma once
#include <cstddef>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace shardlab {

// The parsed document; throws std::runtime_error("'PATH' is damaged: …") when it does not parse, with the
// byte where it breaks and whether the file simply ends there (cut short).
nlohmann::json read_json_file(const std::string& path, size_t max_bytes = size_t(1) << 30);

}  // namespace shardlab
