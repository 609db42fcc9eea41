// Control for lab 04: the reduce-scatter adds the chunk it sends, not the one its predecessor sends (off by one);
// the sums are wrong, and with uneven chunks (1001 elements on 3 ranks) so are the bytes
// loses: sums2 sums34 owner bytes curve
// says: element [0-9]+ is .*expected|first at step 1
#include "comm/ring_steps.h"

namespace shardlab {

namespace {
int mod(int x, int n) { return ((x % n) + n) % n; }
}  // namespace

int reduce_scatter_steps(int n) { return n - 1; }
int all_gather_steps(int n) { return n - 1; }
int reduce_scatter_send_chunk(int r, int n, int s) { return mod(r - s - 1, n); }
int reduce_scatter_recv_chunk(int r, int n, int s) { return mod(r - s - 1, n); }
int all_gather_send_chunk(int r, int n, int s) { return mod(r - s, n); }
int all_gather_recv_chunk(int r, int n, int s) { return mod(r - s - 1, n); }

}  // namespace shardlab
