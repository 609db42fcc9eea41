// A blocking MPI call that cannot be polled — MPI_Init and MPI_Finalize, creating a communicator, MPI's own
// collectives under --comm mpi: every rank first arrives at a barrier the watchdog watches, but a peer that
// stops or dies between that barrier and the call (or before MPI start-up ends) leaves the call waiting for
// ever, and no poll of ours runs to notice. A guard arms a timer for the comm timeout around the call; when it
// runs out, the roll call (comm/roll_call.h) names the ranks that never arrived, the lowest rank still waiting
// prints that one line and exits, and mpirun ends the job; another waiting rank prints only if the job has not
// ended 3 s later, and none once the launcher has gone. The timer is one thread of the process's own (it calls
// no MPI), armed and disarmed by each guard; guards do not nest. Part of src/comm/.
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
