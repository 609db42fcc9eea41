// Which tokens of every sample a rank holds under context parallelism (claim C24): the sequence of T
// positions is cut over c ranks, and rank r keeps its part of every sample, in order:
//   zigzag      2c chunks of T/2c; rank r holds chunks r and 2c−1−r — under a causal mask the early chunk
//               attends to few keys and the late one to many, so every rank does the same attention work;
//   contiguous  c chunks of T/c; rank r holds chunk r — the last rank attends to (2c−1)× the first's keys.
// Row i of a rank's local sequence is global position at(i). One process (c = 1) holds all of [0, T).
// Labels are shifted before the split (a row's target is the next GLOBAL token), and positions, dropout
// masks and the causal mask are all indexed globally through at(), so every token counts as in one process.
#pragma once
#include "core/spelling.h"

namespace shardlab {

enum class ContextSplit { zigzag, contiguous };
inline constexpr Spelling<ContextSplit> kContextSplitWords[] = {{"zigzag", ContextSplit::zigzag},
                                                                {"contiguous", ContextSplit::contiguous}};

struct TokenPositions {
  int run = 0;            // positions per run (a chunk)
  int runs = 1;           // 1, or 2 (zigzag)
  int first[2] = {0, 0};  // the global position of each run's first token
  int chunk[2] = {0, 0};  // the index of each run's chunk among all the chunks of the sequence

  int count() const { return run * runs; }                  // tokens per sample on this rank
  int at(int i) const { return first[i / run] + i % run; }  // global position of local row i
  int run_of(int i) const { return i / run; }

  static TokenPositions whole(int T) { return {T, 1, {0, 0}, {0, 0}}; }
  // Rank r of c. T must be divisible by 2c (zigzag) or c (contiguous): train_config.cpp checks it first.
  static TokenPositions of_rank(int T, int c, int r, ContextSplit split) {
    if (c == 1) return whole(T);
    if (split == ContextSplit::contiguous) return {T / c, 1, {r * (T / c), 0}, {r, 0}};
    const int L = T / (2 * c), late = 2 * c - 1 - r;
    return {L, 2, {r * L, late * L}, {r, late}};
  }
};

}  // namespace shardlab
