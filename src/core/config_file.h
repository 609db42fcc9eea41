// What a --config file may hold, checked line by line before CLI11 reads it (core/flags.h): `key = value`
// with one value per line — no [sections], no arrays, no second value, no '#' after the value — and switches
// as true or false. A key given again overrides the earlier line, as a flag given again on the command line
// does. The file itself must pass paths.h's input check.
#pragma once
#include <string>
#include <vector>

namespace shardlab {

// "" or one sentence naming the file, the line and what is wrong. toggles: the switches' keys.
std::string config_problem(const std::string& path, const std::vector<std::string>& toggles);

}  // namespace shardlab
