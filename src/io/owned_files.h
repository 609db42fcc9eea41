// The files shardlab owns, outside checkpoints (which carry their own meta.json): every file shardlab writes
// into a directory — a run's --out files, a `plot --out` or `schedule --svg` picture — is recorded in that
// directory's shardlab-files.json with its size and SHA-256, and a later command replaces or removes a file
// only while its bytes are still the recorded ones. A file somebody else wrote, or changed after shardlab
// wrote it, is never touched, --overwrite or not: the one rule behind "a file shardlab did not write is never
// replaced". A log that shardlab appends to (loss.csv) is recorded as the bytes written so far: it stays
// shardlab's while those are unchanged and whatever follows them is rows of numbers (steps appended before a
// crash). Leaves out: two processes writing the same directory at once (run directories are locked,
// train/run_dirs.h).
#pragma once
#include <string>
#include <vector>

namespace shardlab {

constexpr const char* kOwnedFilesName = "shardlab-files.json";

// Every file is recorded with the command that wrote it ("by"): a run's files and shardlab's pictures under "", a
// command's own output under its name ("plan --predict --json"). A command replaces only what it wrote itself.

// "" when PATH does not exist or shardlab may replace or remove it; else why not, a sentence fragment
// ("'D/x' was not written by shardlab (D/shardlab-files.json does not list it)", "… was changed since …",
// "… was written by `plan --calibrate --out`, not by …"). log: PATH is an append log (see above).
std::string owned_file_problem(const std::string& path, bool log = false, const std::string& by = "");

// "" when DIR's shardlab-files.json is absent or shardlab's; else why it is not (then nothing in DIR is).
std::string owned_record_problem(const std::string& dir);

// "" when a command may write its output FLAG to PATH: PATH is none of the command's inputs (the same file under
// any name: a link, another spelling), and owned_file_problem(PATH, false, by) holds; else the reason, ending
// "give another FLAG". The one check before every output a command is told to write (--json, --out, --svg).
std::string output_file_problem(const std::string& path, const std::string& flag, const std::string& by,
                                const std::vector<std::string>& inputs = {});

// Writes PATH atomically (io/files.h) and records it. Throws std::runtime_error, PATH untouched, when PATH
// exists and is not shardlab's (log: as an append log; by: see above).
void write_owned_file(const std::string& path, const std::string& text, bool log = false, const std::string& by = "");

// Records PATH's bytes as they are now (a log, after shardlab wrote to it).
void record_owned_file(const std::string& path);

// Removes PATH and its record if shardlab owns it; leaves anything else alone. True when removed.
bool remove_owned_file(const std::string& path);

}  // namespace shardlab
