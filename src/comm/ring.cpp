// The ring: reduce-scatter and all-gather written by hand on point-to-point messages (claim C8), as one
// state machine that serves both the blocking calls and the non-blocking ones (so they cannot differ).
//
// N members sit on a ring; member r sends only to r+1 and receives only from r-1. The buffer is cut into
// N chunks; chunk c belongs to member c.
//
// Reduce-scatter, N-1 steps. At step s member r sends chunk (r-s-1) and receives chunk (r-s-2), which it
// adds into its own copy. Follow chunk c: member c+1 sends its raw x_{c+1} at step 0; member c+2 adds
// x_{c+2} and passes the partial on at step 1; … after N-1 steps it arrives at member c, which adds x_c
// last. So chunk c is always summed as ((x_{c+1} + x_{c+2}) + x_{c+3}) + … + x_c — an order fixed by
// the owner alone (the DETERMINISM contract; float addition is commutative, only grouping matters).
//   bytes: member r sends every chunk but its own, n - counts[r], and receives every chunk but
//   chunk r-1 (the one it starts), n - counts[r-1].
//
// All-gather, N-1 steps. Member r starts with chunk r. At step s it sends chunk (r-s) — its own first,
// then the one it just received — and receives chunk (r-s-1) straight into place.
//   bytes: member r sends every chunk but chunk r+1 (the one it would send last, which its successor
//   already owns), n - counts[r+1], and receives every chunk but its own, n - counts[r].
//
// With equal chunks each phase moves (N-1)/N·n per rank, so all-reduce moves 2(N-1)/N·n: about 2n
// whatever N (C8). Empty chunks send no message (both ends know the counts).
// Leaves out: splitting chunks into pipelined segments, several rings at once (NCCL's channels).
#include <algorithm>
#include <cstring>

#include "comm/communicator.h"
#include "comm/mpi_handle.h"
#include "core/ledger.h"

namespace shardlab {
namespace detail {

namespace {

class RingOp final : public InFlight {
 public:
  RingOp(const RingSpec& spec, void* buf, const std::vector<size_t>& counts)
      : comm_(spec.comm), r_(spec.rank), n_(spec.size), tag_(spec.tag), t_(*spec.type),
        buf_(static_cast<char*>(buf)), cnt_(counts), off_(counts.size() + 1, 0),
        rs_(spec.reduce_scatter ? n_ - 1 : 0), ag_(spec.all_gather ? n_ - 1 : 0), steps_(rs_ + ag_),
        rec_(spec.record), prev_inter_(spec.prev_inter), next_inter_(spec.next_inter), mem_(spec.mem) {
    for (size_t c = 0; c < cnt_.size(); ++c) off_[c + 1] = off_[c] + cnt_[c];
    sreq_.assign(steps_, MPI_REQUEST_NULL);
    if (rs_ > 0) {  // one receive buffer, the size of the largest chunk, reused by every step
      tmp_bytes_ = *std::max_element(cnt_.begin(), cnt_.end()) * t_.bytes;
      tmp_.acquire(tmp_bytes_);
      if (mem_) mem_->allocate(Mem::comm_buffer, tmp_bytes_);
    }
  }
  ~RingOp() override {
    release_tmp();
  }

  bool advance() override {
    if (done_) return true;
    for (;;) {
      if (k_ == steps_) {  // every chunk has arrived; complete once our last sends have left
        if (!test_all_sends()) return false;
        release_tmp();
        finish();
        return true;
      }
      if (!posted_) {
        if (!can_post(k_)) return false;
        post(k_);
        posted_ = true;
      }
      if (rreq_ != MPI_REQUEST_NULL) {
        int flag = 0;
        MPI_Test(&rreq_, &flag, MPI_STATUS_IGNORE);
        if (!flag) return false;
      }
      if (k_ < rs_) {  // reduce-scatter: fold the partial sum that arrived into our copy of the chunk
        int c = recv_chunk(k_);
        if (cnt_[c]) t_.add(chunk(c), tmp_.data(), cnt_[c]);
      }
      ++k_;
      posted_ = false;  // the next step sends what this one produced
    }
  }

  int waiting_for() const override {
    if (posted_ && rreq_ != MPI_REQUEST_NULL) return mod(r_ - 1);
    return mod(r_ + 1);
  }

 private:
  int mod(int x) const { return ((x % n_) + n_) % n_; }
  char* chunk(int c) { return buf_ + off_[c] * t_.bytes; }
  // Step k < rs_ is reduce-scatter step s = k; later steps are all-gather step s = k - rs_.
  int send_chunk(int k) const { return k < rs_ ? mod(r_ - k - 1) : mod(r_ - (k - rs_)); }
  int recv_chunk(int k) const { return k < rs_ ? mod(r_ - k - 2) : mod(r_ - (k - rs_) - 1); }

  // All-gather step s (after a reduce-scatter) receives chunk r-s-1 in place — the chunk reduce-scatter
  // step s sent. MPI may still be reading it, so that send must have completed first.
  bool can_post(int k) {
    if (k < rs_ || rs_ == 0) return true;
    int flag = 0;
    MPI_Test(&sreq_[k - rs_], &flag, MPI_STATUS_IGNORE);
    return flag != 0;
  }

  void post(int k) {
    int rc = recv_chunk(k), sc = send_chunk(k);
    if (cnt_[rc]) {
      void* dst = k < rs_ ? static_cast<void*>(tmp_.data()) : static_cast<void*>(chunk(rc));
      MPI_Irecv(dst, mpi_count(cnt_[rc], "ring chunk"), t_.type, mod(r_ - 1), tag_, comm_, &rreq_);
      ledger_recv(rec_, cnt_[rc] * t_.bytes, prev_inter_);
    }
    if (cnt_[sc]) {
      MPI_Isend(chunk(sc), mpi_count(cnt_[sc], "ring chunk"), t_.type, mod(r_ + 1), tag_, comm_, &sreq_[k]);
      ledger_send(rec_, cnt_[sc] * t_.bytes, next_inter_);
    }
  }

  bool test_all_sends() {
    if (sreq_.empty()) return true;
    int flag = 0;
    MPI_Testall(static_cast<int>(sreq_.size()), sreq_.data(), &flag, MPI_STATUSES_IGNORE);
    return flag != 0;
  }

  void release_tmp() {
    if (mem_ && tmp_bytes_) mem_->release(Mem::comm_buffer, tmp_bytes_);
    tmp_bytes_ = 0;
    tmp_.reset();
  }

  MPI_Comm comm_;
  int r_, n_, tag_;
  const TypeOps& t_;
  char* buf_;
  std::vector<size_t> cnt_, off_;  // chunk c = elements [off_[c], off_[c+1])
  int rs_, ag_, steps_;
  CommCall* rec_;
  bool prev_inter_, next_inter_;
  MemoryLedger* mem_;
  Scratch tmp_;
  size_t tmp_bytes_ = 0;
  int k_ = 0;             // the step in progress
  bool posted_ = false;   // its messages are posted
  MPI_Request rreq_ = MPI_REQUEST_NULL;
  std::vector<MPI_Request> sreq_;  // one send per step, completed lazily
};

}  // namespace

std::unique_ptr<InFlight> make_ring_op(const RingSpec& spec, void* buf, const std::vector<size_t>& counts) {
  return std::make_unique<RingOp>(spec, buf, counts);
}

}  // namespace detail
}  // namespace shardlab
