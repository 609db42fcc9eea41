// Which collectives a communicator runs: the hand-written rings (the default; every byte booked in the comm
// ledger) or MPI's built-ins (for comparison: MPI's own algorithms, booked as calls without ring bytes).
#pragma once
#include "core/spelling.h"

namespace shardlab {

enum class CommImpl { ring, mpi };  // --comm ring (hand-written, default) | mpi (MPI's built-ins)
inline constexpr Spelling<CommImpl> kCommImplWords[] = {{"ring", CommImpl::ring}, {"mpi", CommImpl::mpi}};
const char* comm_impl_name(CommImpl impl);

}  // namespace shardlab
