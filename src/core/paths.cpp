// Checking and reading input files (see paths.h). The check and the read use one open file, so a path
// that changes between them cannot slip a FIFO or a device past the check.
#include "core/paths.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <new>
#include <stdexcept>

namespace shardlab {

namespace {
std::string kind_problem(const std::string& path, const struct stat& st) {
  if (S_ISDIR(st.st_mode)) return "'" + path + "' is a directory, not a file";
  if (!S_ISREG(st.st_mode))
    return "'" + path + "' is not a regular file (" +
           (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
            : S_ISFIFO(st.st_mode)                     ? "a FIFO"
                                                       : "a socket or other special file") +
           ")";
  return "";
}

// Bytes the machine can still give (MemAvailable), or 0 when unknown.
double available_memory() {
  std::ifstream f("/proc/meminfo");
  std::string key, unit;
  double kb = 0;
  while (f >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return 0;
}
}  // namespace

std::string input_file_problem(const std::string& path) {
  struct stat st {};
  if (path.empty()) return "no file named";
  if (::stat(path.c_str(), &st) != 0) return "'" + path + "' does not exist";
  if (std::string why = kind_problem(path, st); !why.empty()) return why;
  if (::access(path.c_str(), R_OK) != 0) return "'" + path + "' cannot be read (permission denied)";
  return "";
}

std::vector<uint8_t> read_file_bytes(const std::string& path, size_t max_bytes) {
  if (std::string why = input_file_problem(path); !why.empty()) throw std::runtime_error(why);
  // O_NONBLOCK: should the path have become a FIFO since the check, opening it does not wait for a writer.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw std::runtime_error("'" + path + "' cannot be opened (" + std::strerror(errno) + ")");
  struct stat st {};
  std::string why = ::fstat(fd, &st) != 0 ? "'" + path + "' cannot be examined" : kind_problem(path, st);
  if (why.empty() && static_cast<size_t>(st.st_size) > max_bytes)
    why = "'" + path + "' has " + std::to_string(st.st_size) + " bytes, more than the " + std::to_string(max_bytes) +
          " such a file may hold";
  // A file read whole must fit in memory: refused with both numbers, not a std::bad_alloc (or a machine
  // that pages itself to death). Asked only of files past 64 MB: smaller ones always fit.
  const double available = why.empty() && st.st_size > (off_t(1) << 26) ? available_memory() : 0;
  if (available > 0 && double(st.st_size) > available)
    why = "'" + path + "' has " + std::to_string(st.st_size) + " bytes, but only " +
          std::to_string(static_cast<long long>(available)) + " bytes of memory are available to read it into";
  std::vector<uint8_t> bytes;
  if (why.empty()) {
    try {
      bytes.resize(static_cast<size_t>(st.st_size));
    } catch (const std::bad_alloc&) {
      ::close(fd);
      throw std::runtime_error("'" + path + "' has " + std::to_string(st.st_size) +
                               " bytes, more than this process can allocate to read it into");
    }
    size_t got = 0;
    while (got < bytes.size()) {
      const ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    if (got != bytes.size()) why = "'" + path + "' could not be read whole";
  }
  ::close(fd);
  if (!why.empty()) throw std::runtime_error(why);
  return bytes;
}

std::string read_file(const std::string& path, size_t max_bytes) {
  const std::vector<uint8_t> b = read_file_bytes(path, max_bytes);
  std::string text(b.begin(), b.end());
  if (const size_t nul = text.find('\0'); nul != std::string::npos) {
    const size_t line = 1 + std::count(text.begin(), text.begin() + nul, '\n');
    throw std::runtime_error("'" + path + "' holds a NUL byte (line " + std::to_string(line) + ", byte " +
                             std::to_string(nul) + "): not a text file shardlab reads");
  }
  return text;
}

}  // namespace shardlab
