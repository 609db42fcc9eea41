// Which chunk each member sends and receives at each step of the ring (see ring_steps.h).
//
// Each phase takes n-1 steps: a chunk needs n-1 hops to visit every other member.
// Reduce-scatter: at step s member r sends chunk r-s-1 and receives chunk r-s-2. Follow chunk c: member
// c+1 sends its raw x_{c+1} at step 0; member c+2 adds x_{c+2} and passes the partial on at step 1; … after
// n-1 steps it arrives at member c, which adds x_c last. So chunk c is always summed as
// ((x_{c+1} + x_{c+2}) + x_{c+3}) + … + x_c — an order fixed by the owner alone, the same in every layout
// that cuts the same chunks (ZeRO-1/2/3 bit-identical to DP rests on it).
// All-gather: member r starts with chunk r; at step s it sends chunk r-s — its own first, then the one it
// just received — and receives chunk r-s-1 straight into place.
#include "comm/ring_steps.h"

namespace shardlab {

namespace {
int mod(int x, int n) { return ((x % n) + n) % n; }
}  // namespace

int reduce_scatter_steps(int n) { return n - 1; }
int all_gather_steps(int n) { return n - 1; }
int reduce_scatter_send_chunk(int r, int n, int s) { return mod(r - s - 1, n); }
int reduce_scatter_recv_chunk(int r, int n, int s) { return mod(r - s - 2, n); }
int all_gather_send_chunk(int r, int n, int s) { return mod(r - s, n); }
int all_gather_recv_chunk(int r, int n, int s) { return mod(r - s - 1, n); }

}  // namespace shardlab
