// CommImpl::mpi: the three chunked collectives through MPI's own implementations, for comparison with
// the hand-written ring (--comm mpi). Blocking calls use MPI_Reduce_scatter / MPI_Allgatherv /
// MPI_Allreduce; non-blocking ones the MPI_I* forms (one request, advanced by MPI_Test).
// MPI chooses its own algorithm and order of additions, so only integer-valued sums are guaranteed
// to match the ring bit for bit; bf16 uses a user-defined MPI_Op with the same widen-add-round; ExactSum
// one that merges (exact_merge), whose result does not depend on the order: it matches the ring.
// Leaves out: bytes on the wire (not observable: ledger records carry the payload only), the watchdog
// for the blocking forms (MPI's calls do not return until done).
#include <cstring>

#include "comm/blocking_call.h"
#include "comm/mpi_handle.h"

namespace shardlab {
namespace detail {

namespace {

class MpiOp final : public InFlight {
 public:
  MpiOp(Builtin what, MPI_Comm comm, int rank, const TypeOps& t, void* buf, const std::vector<size_t>& counts,
        bool blocking)
      : buf_(static_cast<char*>(buf)) {
    size_t n = 0;
    for (size_t c : counts) {
      displs_.push_back(mpi_count(n, "mpi collective"));
      counts_.push_back(mpi_count(c, "mpi collective"));
      n += c;
    }
    int total = mpi_count(n, "mpi collective");
    // Reduce-scatter IN_PLACE leaves member r's sum at the START of the buffer; the contract wants it at
    // chunk r's offset, so it is moved there at completion.
    if (what == Builtin::reduce_scatter) {
      move_bytes_ = counts[rank] * t.bytes;
      move_to_ = displs_[rank] * t.bytes;
    }
    if (blocking) {
      BlockingCall guard("an MPI built-in collective (--comm mpi)");
      switch (what) {
        case Builtin::reduce_scatter:
          MPI_Reduce_scatter(MPI_IN_PLACE, buf, counts_.data(), t.type, t.sum_op(), comm);
          break;
        case Builtin::all_gather:
          MPI_Allgatherv(MPI_IN_PLACE, 0, t.type, buf, counts_.data(), displs_.data(), t.type, comm);
          break;
        case Builtin::all_reduce: MPI_Allreduce(MPI_IN_PLACE, buf, total, t.type, t.sum_op(), comm); break;
      }
    } else {
      switch (what) {
        case Builtin::reduce_scatter:
          MPI_Ireduce_scatter(MPI_IN_PLACE, buf, counts_.data(), t.type, t.sum_op(), comm, &req_);
          break;
        case Builtin::all_gather:
          MPI_Iallgatherv(MPI_IN_PLACE, 0, t.type, buf, counts_.data(), displs_.data(), t.type, comm, &req_);
          break;
        case Builtin::all_reduce: MPI_Iallreduce(MPI_IN_PLACE, buf, total, t.type, t.sum_op(), comm, &req_); break;
      }
    }
  }

  bool advance() override {
    if (done_) return true;
    if (req_ != MPI_REQUEST_NULL) {
      int flag = 0;
      MPI_Test(&req_, &flag, MPI_STATUS_IGNORE);
      if (!flag) return false;
    }
    if (move_bytes_ && move_to_) std::memmove(buf_ + move_to_, buf_, move_bytes_);
    finish();
    return true;
  }

 private:
  char* buf_;
  std::vector<int> counts_, displs_;  // must outlive a non-blocking call
  size_t move_bytes_ = 0, move_to_ = 0;
  MPI_Request req_ = MPI_REQUEST_NULL;
};

}  // namespace

std::unique_ptr<InFlight> make_mpi_op(Builtin what, MPI_Comm comm, int rank, const TypeOps& t, void* buf,
                                      const std::vector<size_t>& counts, bool blocking) {
  return std::make_unique<MpiOp>(what, comm, rank, t, buf, counts, blocking);
}

}  // namespace detail
}  // namespace shardlab
