// The body of a lab's starter file (lessons/NN_*/lab/): a function the student has not written yet ends the
// process with one line naming it — "not written yet: <what>" — and exit code 3, which the grader shows
// as that check's diagnostic (under mpirun the other ranks are ended with it).
#pragma once
#include <cstdio>
#include <cstdlib>

namespace shardlab {

[[noreturn]] inline void not_written_yet(const char* what) {
  std::fprintf(stderr, "not written yet: %s\n", what);
  std::fflush(stderr);
  std::_Exit(3);
}

}  // namespace shardlab
