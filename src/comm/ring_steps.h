// The textbook piece of the ring all-reduce (claim C8), alone in one file so that another implementation
// can take its place (a seam: `make seam SEAM=src/comm/ring_steps.cpp WITH=FILE`, docs/architecture.md):
// how many steps each phase of a ring of n members takes, and which chunk member r sends to its successor
// r+1 and receives from its predecessor r-1 at each step. The buffer is cut into n chunks; chunk c belongs
// to member c.
//   reduce-scatter, steps s = 0 … reduce_scatter_steps(n)-1: the received chunk is ADDED into this member's
//     copy; afterwards member c holds the sum of chunk c over every member.
//   all-gather, steps s = 0 … all_gather_steps(n)-1 (after a reduce-scatter): the received chunk is COPIED
//     into place; afterwards every member holds every chunk.
// The engine that moves the bytes — segments, non-blocking progress, the ledger — is comm/ring.cpp; it asks
// these six functions how many steps and what to send and receive, nothing more. A member sends at step s
// what it received at step s-1 (or, at step 0, what it starts with), so the receive of step s is its
// predecessor's send.
#pragma once

namespace shardlab {

int reduce_scatter_steps(int n);
int all_gather_steps(int n);
int reduce_scatter_send_chunk(int r, int n, int s);
int reduce_scatter_recv_chunk(int r, int n, int s);
int all_gather_send_chunk(int r, int n, int s);
int all_gather_recv_chunk(int r, int n, int s);

}  // namespace shardlab
