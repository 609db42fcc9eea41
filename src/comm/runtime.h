// The MPI runtime: start-up, rank, world size, shut-down and abort. Part of src/comm/, the only
// code that calls MPI. A process started without mpirun is a world of one and never touches MPI,
// so `shardlab plan`, `compare` and single-process training start instantly.
#pragma once
#include <string>

namespace shardlab {

class Runtime {
 public:
  Runtime(int& argc, char**& argv);  // MPI_Init when launched by mpirun
  ~Runtime();                        // MPI_Finalize
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }
  bool is_root() const { return rank_ == 0; }
  bool mpi() const { return mpi_; }
  // End every rank of the job with this exit code (after rank 0 has printed its message).
  [[noreturn]] void abort(int code) const;
  // How long a rank other than 0 waits before reporting an error of its own (rank 0 reports at once; if it failed
  // too, its abort ends the job first): 5 s, or less under a short comm timeout, so that the watchdog of a rank
  // waiting for this one never speaks first — the timeout less 1 s, at least 1 s.
  double report_delay_seconds() const;
  // Rank 0's value on every rank (collective over the world): for a decision only rank 0 can make,
  // e.g. whether it could claim the run's output directories.
  std::string agree(const std::string& root_value) const;
  // Every rank's verdict on what it was given, seen by all (collective over the world): the lowest rank whose code
  // is not 0, and that code; {-1, 0} when every rank's is 0. So that when one rank alone refuses its flags, its
  // data or its settings, every rank knows who speaks and they all end together.
  struct Refusal {
    int rank = -1, code = 0;
  };
  Refusal first_refusal(int code) const;

 private:
  bool mpi_ = false;
  int rank_ = 0, size_ = 1;
};

}  // namespace shardlab
