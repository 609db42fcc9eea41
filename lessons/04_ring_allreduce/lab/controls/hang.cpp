// Control for lab 04: a hang: on 2 members the all-gather's step count never returns (an endless loop, which
// no watchdog sees: the time limit ends it); 3 and 4 members are right
// loses: sums2
// says: did not finish within
#include "comm/ring_steps.h"

namespace shardlab {

namespace {
int mod(int x, int n) { return ((x % n) + n) % n; }
}  // namespace

int reduce_scatter_steps(int n) { return n - 1; }
int all_gather_steps(int n) {
  for (volatile int i = 0; n == 2; i = i + 1) {}
  return n - 1;
}
int reduce_scatter_send_chunk(int r, int n, int s) { return mod(r - s - 1, n); }
int reduce_scatter_recv_chunk(int r, int n, int s) { return mod(r - s - 2, n); }
int all_gather_send_chunk(int r, int n, int s) { return mod(r - s, n); }
int all_gather_recv_chunk(int r, int n, int s) { return mod(r - s - 1, n); }

}  // namespace shardlab
