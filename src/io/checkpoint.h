// Checkpoint directory protocol: one directory per saved step, a `latest` pointer replaced last,
// and a meta.json that records each file's sha256 and size so a load refuses damaged data.
//
//   DIR/latest                   "step_000040\n" (replaced atomically, after everything else)
//   DIR/step_000040/meta.json    caller's meta + format_version, step, files{name: {sha256, bytes}}
//   DIR/step_000040/model.safetensors, optimizer.safetensors, ...
//
// A crash at any point leaves the previous checkpoint loadable: files are written into a unique
// step_NNNNNN.tmp-XXXXXX/ and renamed to step_NNNNNN/ only when complete; a re-saved step is exchanged
// atomically; nothing shardlab did not write is ever removed or replaced. A load checks what meta.json claims (the step
// against the directory's name and the files' own metadata, every file's size and checksum). A reader beside a live
// run that prunes (--keep-last) holds the step it reads (CheckpointHold): pruning passes a held step by, and a step
// removed before it was held is found again through `latest`. Leaves out: what the tensors are (the trainer decides)
// and coordination between writers (the run holds a lock on DIR: train/run_dirs.h). See docs/checkpoint_format.md.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/checkpoint_hold.h"
#include "io/safetensors.h"

namespace shardlab {

constexpr int kCheckpointFormatVersion = 1;

struct CheckpointFile {
  std::string filename;  // e.g. "model.safetensors", "optimizer.safetensors"; no '/'
  std::vector<TensorEntry> tensors;
};

// "step_000040": the step directory name (6-digit zero padding; wider steps just get longer).
std::string step_dir_name(int64_t step);
// The step a directory's name states: 40 for "step_000040" (or "step_000040.old"), -1 for other names.
int64_t step_of_dir_name(const std::string& name);

// Writes DIR/step_NNNNNN/ with each file and meta.json (= meta, an object or null, plus
// format_version, step and files, which overwrite keys of the same name), then replaces
// DIR/latest. Creates DIR if needed; replaces an existing step directory of the same step.
// Returns the step directory path.
std::string save_checkpoint(const std::string& dir, int64_t step, const std::vector<CheckpointFile>& files,
                            const nlohmann::json& meta);

// Keeps the newest `keep` step directories of DIR (by step number) and removes the older ones; the
// step `latest` names is always kept, and so is a step a reader holds (a later prune removes it). keep ≤ 0 keeps
// everything.
void prune_checkpoints(const std::string& dir, int keep);

// Step numbers of DIR's complete step directories (step_NNNNNN/ with a meta.json), ascending.
std::vector<int64_t> checkpoint_steps(const std::string& dir);

// The step directory a --resume / --load names: DIR/latest's step (or, if a re-save was cut between its
// renames, its NAME.old copy), or the step directory itself. Throws with a clear message. latest_named: the name
// `latest` held, when it was read (also when the step it names is missing).
std::string resolve_step_dir(const std::string& dir_or_step, std::string* latest_named = nullptr);
// DIR/latest's step directory name, "" when there is no latest; throws when `latest` is not a regular
// file naming a step directory (something shardlab did not write).
std::string read_latest(const std::string& dir);
// A directory holding a checkpoint's meta.json and nothing but the files it lists (and this code's scratch).
bool is_own_checkpoint(const std::string& step_dir);
// Names of this code's own scratch: "<name>.tmp-XXXXXX", "<name>.prune-XXXXXX".
bool is_scratch_name(const std::string& name);

struct LoadedCheckpoint {
  std::string path;  // the step directory
  nlohmann::json meta;
  std::map<std::string, SafetensorsFile> files;  // by filename
};

// Accepts DIR (follows DIR/latest) or a step directory (contains meta.json), held while it is read. Verifies
// format_version and every listed file's size and sha256 before parsing it; throws
// std::runtime_error naming the path and the problem otherwise.
LoadedCheckpoint load_checkpoint(const std::string& dir_or_step);

}  // namespace shardlab
