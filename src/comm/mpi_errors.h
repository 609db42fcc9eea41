// What an MPI error says. By default MPI ends the job on an error with its own banner (MPI_ERR_TRUNCATE,
// "message truncated") and nothing of ours: which rank, doing what, in which test. The error handler installed
// at start-up (on the world, inherited by every communicator made from it) prints one line — the rank, MPI's
// error text, what the rank was waiting in (the progress engine's current wait, e.g. "all_reduce on dp
// (collective #12 of its group)") and a context the program set (the MPI test suite names its test case) —
// and then ends the job. Part of src/comm/.
#pragma once
#include <string>

namespace shardlab {

// A phrase added to every MPI error this process reports ("in test case '…'"); "" for none.
void set_mpi_error_context(const std::string& context);

namespace detail {
void install_mpi_error_handler();  // Runtime, right after MPI_Init
// The wait in progress (engine.cpp), for the error line; "" when none.
const std::string& current_wait();
}  // namespace detail

}  // namespace shardlab
