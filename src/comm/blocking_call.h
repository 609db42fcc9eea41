// A blocking MPI call that cannot be polled — MPI_Init and MPI_Finalize, creating a communicator, MPI's own
// collectives under --comm mpi: every rank first arrives at a barrier the watchdog watches, but a peer that
// stops or dies between that barrier and the call leaves the call waiting for ever, and no poll of ours
// runs to notice. A guard arms an alarm for the comm timeout around the call; when it rings, the rank says
// what it was stuck in and exits, and mpirun ends the job. Rank 0's alarm rings first, the others' 2 s
// later, so that one rank speaks (unless rank 0 is the one missing). Part of src/comm/.
#pragma once

namespace shardlab::detail {

class BlockingCall {
 public:
  // what: a phrase, e.g. "setting up the world communicator (MPI_Comm_dup)"; it must outlive the guard.
  explicit BlockingCall(const char* what);
  ~BlockingCall();
  BlockingCall(const BlockingCall&) = delete;
  BlockingCall& operator=(const BlockingCall&) = delete;
};

}  // namespace shardlab::detail
