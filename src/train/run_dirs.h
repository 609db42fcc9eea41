// The directories a training run writes into (--out and --save), claimed before step 1 so that no run
// ever replaces or loses what another run wrote, and so that a bad location is found before training:
//  - each is created if missing and locked for the run's whole life (io/files.h DirectoryLock), before anything
//    in it is judged: a second run writing there at the same time is refused as such ("another run is writing
//    here right now"), and an unwritable directory fails now, not after the last step; a refused claim removes
//    the directories and lock files it made;
//  - a directory holding another run's files (loss.csv, config.json, … or checkpoints) is refused with
//    how to proceed: a new directory, or --overwrite;
//  - a run's OWN directory is continued: written by the same run — the same run id, which a resume keeps
//    (config.json's "run_id", meta.json's "run_id") — and holding nothing after the step it resumes from
//    (no loss.csv row, no checkpoint of a later step, which the resume would otherwise replace);
//  - a file shardlab did not write is never replaced, --overwrite or not, and neither is one of the run's
//    own inputs (--data, --config).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/files.h"
#include "train/train_config.h"

namespace shardlab {

// The files a run writes into --out.
extern const std::vector<std::string> kRunOutputFiles;

// A fresh run's identity: time and 48 random bits, e.g. "20261201-081522-3fa9c1b2d04e".
std::string new_run_id();
// The run id a checkpoint was saved under ("" for checkpoints from before run ids).
std::string checkpoint_run_id(const std::string& dir_or_step);

class RunDirs {
 public:
  // Checks and locks cfg.outputs.out and cfg.outputs.save for the run cfg.run_id resuming after resume_step (0: fresh);
  // `inputs` are the files the run reads (data, config file). "" when claimed, else one sentence.
  // Only the rank that writes (world rank 0) claims.
  std::string claim(const TrainConfig& cfg, int64_t resume_step, const std::vector<std::string>& inputs);

 private:
  std::vector<DirectoryLock> locks_;
};

}  // namespace shardlab
