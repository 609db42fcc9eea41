// What a path names, checked before anything reads it: inputs must be regular, readable files —
// never a directory, a device (/dev/zero would be read forever), a FIFO (would block) or a socket —
// and no larger than the reader expects. One check, and one way to read, for every input of every
// command (data, --config, checkpoints and their `latest`, loss.csv, config.json, trace.json, ledgers).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace shardlab {

// "" when path is a regular file this process can read, else the reason as a sentence fragment
// ("'x' does not exist", "'x' is a directory, not a file", …).
std::string input_file_problem(const std::string& path);

// The whole file, after the check above, a size limit and the memory available (MemAvailable); throws
// std::runtime_error with the reason. read_file is for text (configs, CSV, JSON): it refuses a NUL byte,
// which readers built on C strings would take for the end of a value (`steps = 3<NUL>000` read as 3).
std::string read_file(const std::string& path, size_t max_bytes = size_t(1) << 30);
std::vector<uint8_t> read_file_bytes(const std::string& path, size_t max_bytes = size_t(1) << 40);

}  // namespace shardlab
