// Reading JSON: every JSON text the project reads — a file a command wrote (ledger.json, trace.json,
// config.json, meta.json), a rates file, a safetensors header — is parsed here, so that one that is not JSON
// any more (cut short, binary, edited, a number no double holds) is one sentence naming the file, the byte
// where it breaks and the key it was reading, never the JSON library's own text, never a silent "nothing
// there". Leaves out: what the document must hold (each reader checks its own fields).
#pragma once
#include <cstddef>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace shardlab {

// The parsed document; throws std::runtime_error("NAME is damaged: …") when it does not parse, saying where
// (byte, whether the text simply ends there, the key being read: "ranks[1].block_forward").
// NAME: how a message shows the source, e.g. "'run/ledger.json'".
nlohmann::json parse_json_text(const std::string& text, const std::string& name);

// The same for a file: NAME is the path in quotes; a file that cannot be read throws too (core/paths.h).
nlohmann::json read_json_file(const std::string& path, size_t max_bytes = size_t(1) << 30);

// For a check whether a file is shardlab's own (a run's config.json, a checkpoint's meta.json): the document,
// or a discarded value (is_discarded()) when the text is not JSON. Never throws.
nlohmann::json parse_json_or_discarded(const std::string& text);

}  // namespace shardlab
