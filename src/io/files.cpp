// Durable writes and directory locks (see files.h).
#include "io/files.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace shardlab {

namespace {
std::string sys_error() { return std::strerror(errno); }
}  // namespace

void fsync_directory(const std::string& dir) {
  int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // best effort: some filesystems do not allow opening directories
  ::fsync(fd);
  ::close(fd);
}

void write_file_atomic(const std::string& path, const std::vector<ByteSpan>& pieces) {
  if (path.empty()) throw std::runtime_error("no file name to write");
  // A fresh name that nothing else can hold (mkstemp: O_CREAT | O_EXCL): never writes through a
  // symlink or over a file somebody left at PATH.tmp.
  std::string tmp = path + ".tmp-XXXXXX";
  int fd = ::mkstemp(tmp.data());
  if (fd < 0) throw std::runtime_error("cannot create a file next to " + path + ": " + sys_error());
  ::fchmod(fd, 0644);
  auto fail = [&](const std::string& what) {
    std::string msg = what + " " + tmp + ": " + sys_error();
    ::close(fd);
    ::unlink(tmp.c_str());
    return std::runtime_error(msg);
  };
  for (const ByteSpan& piece : pieces) {
    const char* p = static_cast<const char*>(piece.data);
    size_t left = piece.n;
    while (left > 0) {
      ssize_t w = ::write(fd, p, std::min(left, size_t(1) << 30));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) throw fail("cannot write");  // e.g. disk full
      p += w;
      left -= static_cast<size_t>(w);
    }
  }
  if (::fsync(fd) != 0) throw fail("cannot fsync");
  if (::close(fd) != 0) {
    std::string msg = "cannot close " + tmp + ": " + sys_error();
    ::unlink(tmp.c_str());
    throw std::runtime_error(msg);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string msg = "cannot rename " + tmp + " to " + path + ": " + sys_error();
    ::unlink(tmp.c_str());
    throw std::runtime_error(msg);
  }
  size_t slash = path.find_last_of('/');
  fsync_directory(slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash)));
}

void write_text_file_atomic(const std::string& path, const std::string& text) {
  write_file_atomic(path, {{text.data(), text.size()}});
}

std::string DirectoryLock::acquire(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) return "cannot create directory '" + dir + "' (" + ec.message() + ")";
  const std::string path = dir + "/" + kFileName;
  // O_NOFOLLOW: a symlink at PATH is never followed (it would create or lock a file elsewhere);
  // O_NONBLOCK: a FIFO at PATH never blocks the open. Only a regular file is ever the lock.
  const std::string not_ours =
      "'" + path + "' is not a regular file (the lock file shardlab makes is); remove it, or choose another directory";
  // A few attempts: the file locked can be removed in between by the refused claim that created it.
  for (int attempt = 0; attempt < 5; ++attempt) {
    const int flags = O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;
    bool created = true;
    int fd = ::open(path.c_str(), flags | O_CREAT | O_EXCL, 0644);  // O_EXCL: whether this lock made it
    if (fd < 0 && errno == EEXIST) {
      created = false;
      fd = ::open(path.c_str(), flags);
      if (fd < 0 && errno == ENOENT) continue;  // removed since: make it again
    }
    if (fd < 0 && (errno == ELOOP || errno == EISDIR || errno == ENXIO)) return not_ours;
    if (fd < 0) return "cannot write into '" + dir + "' (" + sys_error() + ")";
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      return not_ours;
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const bool busy = errno == EWOULDBLOCK;
      const std::string why = sys_error();
      ::close(fd);
      return busy ? "another shardlab run is writing into '" + dir + "' right now (it holds " + path +
                        "); wait for it to finish, or choose another directory"
                  : "cannot lock '" + path + "' (" + why + ")";
    }
    struct stat now {};
    if (::lstat(path.c_str(), &now) != 0 || now.st_dev != st.st_dev || now.st_ino != st.st_ino) {
      ::close(fd);  // the file locked was removed meanwhile (its creator's claim was refused): lock the new one
      continue;
    }
    fd_ = fd;
    created_ = created;
    path_ = path;
    return "";
  }
  return "cannot lock '" + path + "': it is removed and made again while it is locked (other shardlab runs starting)";
}

void DirectoryLock::abandon() {
  if (fd_ < 0) return;
  if (created_) ::unlink(path_.c_str());  // while still held: whoever locks it next sees it is gone
  ::close(fd_);
  fd_ = -1;
}

DirectoryLock::~DirectoryLock() {
  if (fd_ >= 0) ::close(fd_);  // closing drops the lock
}

}  // namespace shardlab
