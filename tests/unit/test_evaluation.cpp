// Evaluation never drops: the validation loss of a model is the same whatever --dropout it trains with. A
// forward with train = false (what train/evaluate.cpp runs) of a model built with dropout 0.1 equals, bit for
// bit, the same forward of the same weights built with dropout 0 — and a training forward with dropout differs
// (the control: dropout is really on).
#include <catch2/catch.hpp>

#include <vector>

#include "core/rng.h"
#include "model/gpt.h"

using namespace shardlab;

TEST_CASE("evaluation ignores dropout: the loss of dropout 0.1 and 0 models is the same, bit for bit", "[model]") {
  GPTConfig with;
  with.layers = 2;
  with.hidden = 16;
  with.heads = 2;
  with.seq = 8;
  with.vocab = 13;
  with.dropout = 0.1;
  GPTConfig without = with;
  without.dropout = 0.0;
  const ParamLayout layout(with);
  std::vector<double> params(layout.total());
  init_params(layout, with, 3, params.data(), 0, params.size());
  const int B = 3, N = B * with.seq;
  std::vector<int32_t> in(N), tg(N);
  const RngStream r = rng_stream(9, "test:evaluation");
  for (int i = 0; i < N; ++i) in[i] = int(r.below(i, 13)), tg[i] = int(r.below(100 + i, 13));
  MemoryLedger ledger;
  GPT<double> a(with, layout, B, ledger), b(without, layout, B, ledger);
  const DropoutContext drop{7, 1, 0};
  const double eval_with = a.forward(params.data(), in.data(), tg.data(), false, drop);
  const double eval_without = b.forward(params.data(), in.data(), tg.data(), false, drop);
  CHECK(eval_with == eval_without);
  const double train_with = a.forward(params.data(), in.data(), tg.data(), true, drop);
  const double train_without = b.forward(params.data(), in.data(), tg.data(), true, drop);
  CHECK(train_with != train_without);  // the control: dropout does act in training
  CHECK(train_without == eval_without);
}
