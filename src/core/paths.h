// What a path names, checked before anything reads it: inputs must be regular, readable files —
// never a directory, a device (/dev/zero would be read forever), a FIFO (would block) or a socket.
// One check for every input of every command (data, --config, checkpoints, loss.csv).
#pragma once
#include <sys/stat.h>
#include <unistd.h>

#include <string>

namespace shardlab {

// "" when path is a regular file this process can read, else the reason as a sentence fragment
// ("'x' does not exist", "'x' is a directory, not a file", …).
inline std::string input_file_problem(const std::string& path) {
  struct stat st {};
  if (path.empty()) return "no file named";
  if (::stat(path.c_str(), &st) != 0) return "'" + path + "' does not exist";
  if (S_ISDIR(st.st_mode)) return "'" + path + "' is a directory, not a file";
  if (!S_ISREG(st.st_mode))
    return "'" + path + "' is not a regular file (" +
           (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
            : S_ISFIFO(st.st_mode)                     ? "a FIFO"
                                                       : "a socket or other special file") +
           ")";
  if (::access(path.c_str(), R_OK) != 0) return "'" + path + "' cannot be read (permission denied)";
  return "";
}

}  // namespace shardlab
