// Control for lab 04: a second correct implementation, written another way: not by the closed forms but by
// following the chunks around the ring (at step 0 a member sends what it starts with; at step s what it
// received at step s-1; it receives what its predecessor sends). It gives the reference's chunks step for
// step, so it keeps every point, the curve bit for bit included
// loses:
// says: total: 10 / 10 points
#include "comm/ring_steps.h"

namespace shardlab {

namespace {
int wrap(int x, int n) { return ((x % n) + n) % n; }
}  // namespace

// Reduce-scatter: a member starts with the chunk it will pass on first, its predecessor's (chunk r-1).
int reduce_scatter_steps(int n) { return n - 1; }
int all_gather_steps(int n) { return n - 1; }
int reduce_scatter_send_chunk(int r, int n, int s) {
  return s == 0 ? wrap(r - 1, n) : reduce_scatter_recv_chunk(r, n, s - 1);
}
int reduce_scatter_recv_chunk(int r, int n, int s) { return reduce_scatter_send_chunk(wrap(r - 1, n), n, s); }

// All-gather: after the reduce-scatter a member owns its own chunk, the first it sends.
int all_gather_send_chunk(int r, int n, int s) { return s == 0 ? r : all_gather_recv_chunk(r, n, s - 1); }
int all_gather_recv_chunk(int r, int n, int s) { return all_gather_send_chunk(wrap(r - 1, n), n, s); }

}  // namespace shardlab
