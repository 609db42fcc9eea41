// Lab 04 — the ring all-reduce: your ring_steps.cpp (the task: LAB_README.md; the contract: src/comm/ring_steps.h).
// shardlab's ring engine (src/comm/ring.cpp) moves the bytes; it asks these six functions how many steps each
// phase takes and which chunk member r of n sends to r+1 and receives from r-1 at step s. The buffer is cut
// into n chunks; chunk c belongs to member c. Grade it: make lab LAB=04 SOLUTION=<this file>
#include "comm/ring_steps.h"

#include "core/not_written.h"

namespace shardlab {

// Reduce-scatter: the received chunk is ADDED into this member's copy. Afterwards member c holds the sum of
// chunk c over every member, added in the order ((x_{c+1} + x_{c+2}) + …) + x_c.
int reduce_scatter_steps(int n) { not_written_yet("reduce_scatter_steps"); }
int reduce_scatter_send_chunk(int r, int n, int s) { not_written_yet("reduce_scatter_send_chunk"); }
int reduce_scatter_recv_chunk(int r, int n, int s) { not_written_yet("reduce_scatter_recv_chunk"); }

// All-gather (after the reduce-scatter): the received chunk is COPIED into place. Afterwards every member
// holds every chunk.
int all_gather_steps(int n) { not_written_yet("all_gather_steps"); }
int all_gather_send_chunk(int r, int n, int s) { not_written_yet("all_gather_send_chunk"); }
int all_gather_recv_chunk(int r, int n, int s) { not_written_yet("all_gather_recv_chunk"); }

}  // namespace shardlab
