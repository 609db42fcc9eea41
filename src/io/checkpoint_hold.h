// A reader's hold on one checkpoint step, so that a live run's pruning (--keep-last) leaves the step in place
// while a --resume, --load or eval reads it. Part of the checkpoint protocol (io/checkpoint.h). Leaves out:
// writers (the run holds a lock on the whole directory: train/run_dirs.h).
#pragma once
#include <string>

namespace shardlab {

// A reader's hold on one checkpoint step: the step directory a --resume / --load names (resolve_step_dir), held
// with a shared lock on the directory until released, so that another run's prune_checkpoints leaves it in place
// while it is read. Every read of one command goes through one hold, so its configuration, its checks and its
// tensors all come from the same step. Between reading `latest` and taking the lock, a live run may save a newer
// step and prune the one `latest` named: then `latest` is read again and the hold taken on the step it names now
// (once more; a run that replaces its newest step faster than that is named). Throws as resolve_step_dir does.
class CheckpointHold {
 public:
  CheckpointHold() = default;
  explicit CheckpointHold(const std::string& dir_or_step);
  ~CheckpointHold();
  CheckpointHold(CheckpointHold&& o) noexcept;
  CheckpointHold& operator=(CheckpointHold&& o) noexcept;
  CheckpointHold(const CheckpointHold&) = delete;
  CheckpointHold& operator=(const CheckpointHold&) = delete;
  const std::string& step_dir() const { return step_dir_; }  // "" when nothing is held
  void release();                                            // pruning may remove the step from now on

 private:
  std::string step_dir_;
  int fd_ = -1;
};

}  // namespace shardlab
