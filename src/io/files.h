// Writing files so that nothing is ever half-written or written twice at once: the durable whole-file
// replace (write a fresh PATH.tmp-XXXXXX, fsync, rename over PATH, fsync the directory) every output
// goes through — it never follows a symlink or touches a file it did not create —
// and a directory lock (flock on DIR/shardlab.lock) that one run holds for as long as it writes there.
// Leaves out: locks across machines that do not share a kernel's flock (NFS before v4).
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace shardlab {

struct ByteSpan {
  const void* data;
  size_t n;
};
// Throws std::runtime_error naming the path on any failure (PATH is then untouched).
void write_file_atomic(const std::string& path, const std::vector<ByteSpan>& pieces);
void write_text_file_atomic(const std::string& path, const std::string& text);
void fsync_directory(const std::string& dir);  // best effort: makes a rename in DIR durable

// Holds an exclusive lock on DIR (created if missing) until destroyed or the process ends (the kernel
// drops it then, so a killed run never leaves a stale lock). The lock is a regular file: a symlink, FIFO,
// device or directory named shardlab.lock is refused, never followed or opened. A lock file is only ever
// removed by the lock that created it, while it holds it (abandon: a refused claim leaves no trace), so every
// acquire checks that the file it locked is still the one at DIR/shardlab.lock.
class DirectoryLock {
 public:
  static constexpr const char* kFileName = "shardlab.lock";
  DirectoryLock() = default;
  // "" when locked; otherwise why not (another process holds it, or DIR cannot be created or written).
  std::string acquire(const std::string& dir);
  // Drops the lock, first removing the lock file if this lock created it.
  void abandon();
  ~DirectoryLock();
  DirectoryLock(DirectoryLock&& o) noexcept : fd_(o.fd_), created_(o.created_), path_(std::move(o.path_)) {
    o.fd_ = -1;
  }
  DirectoryLock& operator=(DirectoryLock&&) = delete;
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

 private:
  int fd_ = -1;
  bool created_ = false;  // this lock made the lock file
  std::string path_;      // DIR/shardlab.lock
};

}  // namespace shardlab
