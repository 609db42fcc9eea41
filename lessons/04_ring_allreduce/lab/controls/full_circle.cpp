// Control for lab 04: correct but wasteful: the all-gather goes all the way round (n steps, one more than needed), so
// each member sends N/N of the payload in it instead of (N-1)/N
// loses: bytes ledger
// says: rank 0 sent 14000 B \(formula 12000\)
#include "comm/ring_steps.h"

namespace shardlab {

namespace {
int mod(int x, int n) { return ((x % n) + n) % n; }
}  // namespace

int reduce_scatter_steps(int n) { return n - 1; }
int all_gather_steps(int n) { return n; }
int reduce_scatter_send_chunk(int r, int n, int s) { return mod(r - s - 1, n); }
int reduce_scatter_recv_chunk(int r, int n, int s) { return mod(r - s - 2, n); }
int all_gather_send_chunk(int r, int n, int s) { return mod(r - s, n); }
int all_gather_recv_chunk(int r, int n, int s) { return mod(r - s - 1, n); }

}  // namespace shardlab
