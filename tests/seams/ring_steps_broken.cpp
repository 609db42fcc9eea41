// A wrong implementation of the ring's steps (src/comm/ring_steps.h), the control of tests/cli/seams.sh:
// the all-gather receives the chunk its member already holds instead of the one it lacks, so every member
// keeps a stale chunk. The ring tests must catch it (a seam that is not really swapped would pass them).
#include "comm/ring_steps.h"

namespace shardlab {

namespace {
int wrap(int x, int n) { return ((x % n) + n) % n; }
}  // namespace

int reduce_scatter_steps(int n) { return n - 1; }
int all_gather_steps(int n) { return n - 1; }
int reduce_scatter_send_chunk(int r, int n, int s) { return wrap(r - s - 1, n); }
int reduce_scatter_recv_chunk(int r, int n, int s) { return wrap(r - s - 2, n); }
int all_gather_send_chunk(int r, int n, int s) { return wrap(r - s, n); }
int all_gather_recv_chunk(int r, int n, int s) { return wrap(r - s, n); }  // should be r - s - 1

}  // namespace shardlab
