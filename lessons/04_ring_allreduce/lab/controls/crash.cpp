// Control for lab 04: a crash: the first call writes through a null pointer
// loses: sums2 sums34 owner bytes curve ledger
// says: crashed: .*signal 11
#include "comm/ring_steps.h"

namespace shardlab {

namespace {
int mod(int x, int n) { return ((x % n) + n) % n; }
}  // namespace

int reduce_scatter_steps(int n) {
  *(volatile int*)nullptr = n;
  return n - 1;
}
int all_gather_steps(int n) { return n - 1; }
int reduce_scatter_send_chunk(int r, int n, int s) { return mod(r - s - 1, n); }
int reduce_scatter_recv_chunk(int r, int n, int s) { return mod(r - s - 2, n); }
int all_gather_send_chunk(int r, int n, int s) { return mod(r - s, n); }
int all_gather_recv_chunk(int r, int n, int s) { return mod(r - s - 1, n); }

}  // namespace shardlab
