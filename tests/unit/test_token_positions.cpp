// Context parallelism's split of every sample's tokens (model/token_positions.h) and the per-token pieces that
// must index it globally: each split gives every position of [0, T) to exactly one cp rank (zigzag: chunks r
// and 2c−1−r; contiguous: chunk r); a rank's dropout rows (dropout.h) draw the whole activation's mask at its
// global positions, also across a zigzag rank's two runs and for a sequence-parallel slice of them; its
// embedding rows (embedding.h) add the position embeddings of its global positions, and their backward
// scatters into those rows of the table.
#include <catch2/catch.hpp>

#include <vector>

#include "model/dropout.h"
#include "model/embedding.h"
#include "model/token_positions.h"

using namespace shardlab;

TEST_CASE("every split gives each position to exactly one cp rank, zigzag as chunks r and 2c-1-r",
          "[context_parallel]") {
  for (int c : {1, 2, 3, 4})
    for (ContextSplit split : {ContextSplit::zigzag, ContextSplit::contiguous}) {
      const int T = 2 * c * 12;
      std::vector<int> owner(T, -1);
      INFO("c = " << c << ", " << word_of(kContextSplitWords, split));
      for (int r = 0; r < c; ++r) {
        const TokenPositions p = TokenPositions::of_rank(T, c, r, split);
        REQUIRE(p.count() == T / c);
        for (int i = 0; i < p.count(); ++i) {
          CHECK(owner[p.at(i)] == -1);
          owner[p.at(i)] = r;
          if (i > 0 && p.run_of(i) == p.run_of(i - 1)) CHECK(p.at(i) == p.at(i - 1) + 1);  // runs are consecutive
        }
        if (split == ContextSplit::zigzag && c > 1) {
          const int L = T / (2 * c);
          CHECK(p.at(0) == r * L);
          CHECK(p.at(L) == (2 * c - 1 - r) * L);
          CHECK(p.chunk[0] == r);
          CHECK(p.chunk[1] == 2 * c - 1 - r);
        } else {
          CHECK(p.at(0) == r * (T / c));
        }
      }
      for (int t = 0; t < T; ++t) CHECK(owner[t] >= 0);
    }
}

TEST_CASE("a cp rank's dropout and embedding rows are the whole sequence's at its global positions",
          "[context_parallel]") {
  const int B = 2, T = 48, C = 8, NH = 2, V = 11, c = 3;
  const double p = 0.3;
  std::vector<double> act(size_t(B) * T * C, 1.0);
  const Dropout whole = Dropout::make(p, 5, "dropout:mlp", 4, 1, /*first_sample=*/3, T, C, NH);
  whole.apply_activation(act.data(), B);
  std::vector<int32_t> tokens(size_t(B) * T);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = int32_t((i * 7 + 3) % V);
  std::vector<double> tok(size_t(V) * C), pos(size_t(T) * C);
  for (size_t i = 0; i < tok.size(); ++i) tok[i] = double(i % 13);
  for (size_t i = 0; i < pos.size(); ++i) pos[i] = 1000.0 * double(i + 1);
  std::vector<double> emb(size_t(B) * T * C);
  embedding_forward(emb.data(), tokens.data(), tok.data(), pos.data(), B, T, C);
  for (ContextSplit split : {ContextSplit::zigzag, ContextSplit::contiguous})
    for (int r = 0; r < c; ++r) {
      const TokenPositions tp = TokenPositions::of_rank(T, c, r, split);
      const int Tc = tp.count();
      INFO(word_of(kContextSplitWords, split) << ", cp rank " << r);
      for (int t = 2; t >= 1; --t) {  // the whole rank (t = 1), and each half as a sequence-parallel rank holds it
        for (int q = 0; q < t; ++q) {
          const int Tl = Tc / t, first = q * Tl;
          std::vector<double> mine(size_t(B) * Tl * C, 1.0);
          Dropout::make(p, 5, "dropout:mlp", 4, 1, 3, T, C, NH, 0, first, tp).apply_activation(mine.data(), B, Tl);
          int differ = 0;
          for (int b = 0; b < B; ++b)
            for (int i = 0; i < Tl; ++i)
              for (int k = 0; k < C; ++k)
                differ += mine[(size_t(b) * Tl + i) * C + k] != act[(size_t(b) * T + tp.at(first + i)) * C + k];
          INFO("rows [" << first << ", " << first + Tl << ") of the rank's " << Tc);
          CHECK(differ == 0);
        }
      }
      // Embedding: the rank's tokens (gathered at its positions) and its position-embedding rows.
      std::vector<int32_t> my_tokens(size_t(B) * Tc);
      for (int b = 0; b < B; ++b)
        for (int i = 0; i < Tc; ++i) my_tokens[size_t(b) * Tc + i] = tokens[size_t(b) * T + tp.at(i)];
      std::vector<double> my_emb(size_t(B) * Tc * C);
      embedding_forward(my_emb.data(), my_tokens.data(), tok.data(), pos.data(), B, Tc, C, 0, -1, tp);
      int differ = 0;
      for (int b = 0; b < B; ++b)
        for (int i = 0; i < Tc; ++i)
          for (int k = 0; k < C; ++k)
            differ += my_emb[(size_t(b) * Tc + i) * C + k] != emb[(size_t(b) * T + tp.at(i)) * C + k];
      CHECK(differ == 0);
      // Backward: a gradient of ones lands in exactly the rank's position rows, B times each.
      std::vector<double> ones(my_emb.size(), 1.0), d_tok(tok.size()), d_pos(pos.size());
      embedding_backward(d_tok.data(), d_pos.data(), ones.data(), my_tokens.data(), B, Tc, C, 0, -1, tp);
      std::vector<int> held(T, 0);
      for (int i = 0; i < Tc; ++i) held[tp.at(i)] = 1;
      int wrong = 0;
      for (int t = 0; t < T; ++t) wrong += d_pos[size_t(t) * C] != (held[t] ? double(B) : 0.0);
      CHECK(wrong == 0);
    }
}
