// train/step_timer.cpp — one rank's training step timed in-process (see step_timer.h).
#include "train/step_timer.h"

#include <chrono>
#include <cstdint>
#include <vector>

#include "core/ledger.h"
#include "core/rng.h"
#include "model/gpt.h"
#include "optim/model_states.h"

namespace shardlab {

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Seconds for cfg.run.steps training steps of T after one warm-up step, on random tokens, and the model
// states' bytes that training kept (from the ledger).
template <class T>
StepTiming time_steps(const TrainConfig& cfg) {
  MemoryLedger ledger;
  const GPTConfig& m = cfg.model;
  ParamLayout layout(m);
  ModelStates<T> states(cfg.recipe, cfg.optimizer, layout, ledger);
  states.init_weights(cfg.model, cfg.run.seed);
  GPT<T> model(m, layout, cfg.micro_batch, ledger, cfg.activation_policy());
  const int B = cfg.micro_batch, Tn = m.seq;
  std::vector<int32_t> in(size_t(B) * Tn), tg(size_t(B) * Tn);
  RngStream r = rng_stream(cfg.run.seed, "bench-tokens");
  for (size_t i = 0; i < in.size(); ++i) {
    in[i] = int(r.below(2 * i, m.vocab));
    tg[i] = int(r.below(2 * i + 1, m.vocab));
  }
  const T scale = T(1) / T(B * Tn);
  auto step = [&](int s) {
    states.zero_grads();
    model.forward(states.compute_params(), in.data(), tg.data(), true, {cfg.run.seed, uint64_t(s), 0});
    model.backward(states.backward_grads(), states.compute_params(), scale);
    states.end_micro_batch();
    states.grad_norm();
    states.optimizer_step(s, 1e-4, 1.0);
  };
  step(1);  // warm-up: page in every buffer
  auto t0 = std::chrono::steady_clock::now();
  for (int s = 2; s < 2 + cfg.run.steps; ++s) step(s);
  return {seconds_since(t0), ledger.model_state_bytes()};
}

template <class T>
UpdateTiming time_updates(const TrainConfig& cfg, int reps) {
  MemoryLedger ledger;
  ParamLayout layout(cfg.model);
  ModelStates<T> states(cfg.recipe, cfg.optimizer, layout, ledger);
  states.init_weights(cfg.model, cfg.run.seed);
  auto update = [&](int s) {
    states.zero_grads();
    states.end_micro_batch();
    states.grad_norm();
    states.optimizer_step(s, 1e-4, 1.0);
  };
  update(1);  // warm-up: page in every buffer
  auto t0 = std::chrono::steady_clock::now();
  for (int s = 2; s < 2 + reps; ++s) update(s);
  return {seconds_since(t0) / reps, states.size()};
}

}  // namespace

UpdateTiming time_update_steps(const TrainConfig& cfg, int reps) {
  return cfg.recipe.f64() ? time_updates<double>(cfg, reps) : time_updates<float>(cfg, reps);
}

StepTiming time_training_steps(const TrainConfig& cfg) {
  return cfg.recipe.f64() ? time_steps<double>(cfg) : time_steps<float>(cfg);
}

}  // namespace shardlab
