// Pipeline parallelism on real ranks (parallel/pipeline.h, schedule.h; claims C20–C22), at world sizes 2
// and 4 (skipped at the others): one training step's gradients through PipelineStage, wired as
// src/train/trainer.cpp wires it (TrainConfig, ProcessGrid, a stage's ParamLayout of its held units, the
// DataParallel engine, one ModelChunk per local chunk, the micro-batch source), in f64 with dropout on,
// against a single process computed on every rank: the whole ParamLayout and one ModelChunk over the whole
// model (FlatAccess), fed the same micro-batches in order.
//  - the ranks as pp (world 2: pp 2; world 4: pp 4) with GPipe, 1F1B and interleaved (v = 2), several m
//    (also m < p for GPipe and 1F1B) and uneven --pp-layers splits: every element of every stage's
//    gradients (the engine's grads for its held units, mapped to the whole layout by tensor name), the step
//    loss and the gradient norm equal the single process BIT FOR BIT (==); the stages' gradients together
//    cover the whole layout exactly once; only the last stage computes a loss;
//  - pp 2 × dp 2 at world 4 (each dp rank its own micro-batches): the same within f64 tolerance (1e-12
//    relative; the dp sum adds the ranks' partial gradients in another order than one process does);
//  - the v chunks of an interleaved stage share one workspace (the ledger's workspace grows by one chunk's);
//  - the comm ledger: the pp axis carries exactly the schedule's point-to-point messages, each one
//    micro-batch's B·T·C elements of sizeof(double) bytes; per rank the bytes sent (= received) are
//    m·B·T·C·8 for each chunk border the stage's chunks touch — per stage boundary m·B·T·C·8 each way
//    (activations forward, gradients back), v× that between neighbouring stages with interleaved (plus
//    (v − 1)× on the wrap from the last stage to the first) — and summed over the stages 2·(p·v − 1)·m·B·T·C·8.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "../common/worst.h"
#include "comm/process_grid.h"
#include "core/rng.h"
#include "helpers.h"
#include "model/model_chunk.h"
#include "model/param_layout.h"
#include "parallel/data_parallel.h"
#include "parallel/pipeline.h"
#include "parallel/pipeline_partition.h"
#include "parallel/schedule.h"
#include "train/train_config.h"

using namespace shardlab;
using namespace shardlab::test;

namespace {

constexpr uint64_t kSeed = 2024;
constexpr uint64_t kStep = 5;
constexpr double kRtol = 1e-12;

// 8 layers (pp 4 × v 2 = 8 chunks of one), hidden 16, 2 heads, 8 tokens, vocab 64, dropout 0.1.
TrainConfig pipeline_config() {
  TrainConfig cfg;
  cfg.model.layers = 8;
  cfg.model.hidden = 16;
  cfg.model.heads = 2;
  cfg.model.seq = 8;
  cfg.model.vocab = 64;
  cfg.model.dropout = 0.1;
  cfg.micro_batch = 2;
  cfg.recipe.dtype = Dtype::f64;
  cfg.run.seed = kSeed;
  cfg.layout.bucket_mb = 0.01;  // several buckets when dp > 1
  return cfg;
}

// Global sample k of the step: T + 1 tokens from the counter RNG (layout-free).
void fill_tokens(const GPTConfig& cfg, uint64_t first, int samples, std::vector<int32_t>& inputs,
                 std::vector<int32_t>& targets) {
  const int T = cfg.seq;
  inputs.resize(size_t(samples) * T);
  targets.resize(inputs.size());
  const RngStream rng = rng_stream(kSeed, "test:pipeline tokens", kStep);
  for (int k = 0; k < samples; ++k)
    for (int s = 0; s < T; ++s) {
      const uint64_t i = (first + k) * (T + 1) + s;
      inputs[size_t(k) * T + s] = static_cast<int32_t>(rng.below(i, cfg.vocab));
      targets[size_t(k) * T + s] = static_cast<int32_t>(rng.below(i + 1, cfg.vocab));
    }
}

// Σ g² of each unit in flat order, the units added in unit order (the engine's layout-independent norm).
double unit_norm(const ParamLayout& whole, const std::vector<double>& g) {
  double total = 0.0;
  for (int u = 0; u < whole.units(); ++u) {
    double s = 0.0;
    for (size_t i = whole.unit_begin(u); i < whole.unit_end(u); ++i) s += g[i] * g[i];
    total += s;
  }
  return std::sqrt(total);
}

struct Reference {
  double loss = 0, gnorm = 0;
  std::vector<double> grads;  // whole layout
};

// One process, the whole model, micro-batch j = samples [j·B, (j + 1)·B) of the global batch, in order.
Reference single_process(const TrainConfig& cfg, int micro_batches) {
  const ParamLayout whole(cfg.model);
  MemoryLedger ledger;
  Buffer<double> P(ledger, Mem::param, whole.total()), G(ledger, Mem::grad, whole.total());
  init_params(whole, cfg.model, cfg.run.seed, P.data(), 0, whole.total());
  std::fill(G.data(), G.data() + whole.total(), 0.0);
  ModelChunk<double> model(cfg.model, whole, ChunkSpec::whole(cfg.model), cfg.micro_batch, ActivationPolicy{}, ledger);
  FlatAccess<double> access(whole, P.data(), G.data());
  const int B = cfg.micro_batch;
  const double tokens = double(cfg.global_batch) * cfg.model.seq;
  std::vector<int32_t> inputs, targets;
  double loss = 0;
  for (int j = 0; j < micro_batches; ++j) {
    const uint64_t first = uint64_t(j) * B;
    fill_tokens(cfg.model, first, B, inputs, targets);
    loss += model.forward(MicroBatch{j, B, inputs.data(), targets.data(), {cfg.run.seed, kStep, first}}, access);
    model.backward(j, access, 1.0 / tokens);
  }
  Reference r;
  r.loss = loss / tokens;
  r.grads.assign(G.data(), G.data() + whole.total());
  r.gnorm = unit_norm(whole, r.grads);
  return r;
}

struct Layout {
  int pp;
  ScheduleKind kind;
  int v, m;  // m: micro-batches per dp rank per step
  const char* pp_layers;
};

std::string label(const Layout& l, int dp) {
  std::ostringstream o;
  o << "pp " << l.pp << " × dp " << dp << ", " << schedule_name(l.kind) << (l.v > 1 ? " v=" + std::to_string(l.v) : "")
    << ", m=" << l.m << (*l.pp_layers ? std::string(", --pp-layers ") + l.pp_layers : "");
  return o.str();
}

struct StageRun {
  int stage = 0, dp_rank = 0;
  double local_loss = 0, loss = 0, gnorm = 0;
  // Per local tensor: its name and gradients.
  std::vector<std::pair<std::string, std::vector<double>>> grads;
  // This step's point-to-point calls on the pp axis.
  size_t sends = 0, recvs = 0, bad_sizes = 0, bad_bytes = 0;
  uint64_t sent = 0, received = 0;
  size_t other_pp_p2p = 0;  // send/recv records on other axes or with other ops
};

// One step as src/train/trainer.cpp drives it.
StageRun pipeline_step(const TrainConfig& cfg, const Layout& l) {
  CommLedger comm;
  ProcessGrid grid(GridSizes{0, 1, l.pp, 1, 1}, 0, &comm, nullptr, CommImpl::ring);
  const int dp = grid.size(Axis::dp), dp_rank = grid.coord(Axis::dp), stage = grid.coord(Axis::pp);
  const PipelinePartition part =
      partition_layers(cfg.model.layers, cfg.layout.pp, cfg.layout.virtual_stages, cfg.layout.pp_layers);
  const ParamLayout layout(cfg.model, cfg.slice(0), part.held_units(stage));
  MemoryLedger memory;
  Trace trace;
  DataParallel<double> engine(cfg.layout, cfg.recipe, cfg.optimizer, layout, grid, memory, trace);
  engine.states().init_weights(cfg.model, cfg.run.seed);
  std::vector<std::unique_ptr<ModelChunk<double>>> chunks;
  std::vector<ModelChunk<double>*> ptrs;
  size_t one_workspace = 0;
  const size_t workspace_before = memory.current(Mem::workspace);
  for (int c = 0; c < part.virtual_stages; ++c) {
    const size_t before = memory.current(Mem::workspace);
    chunks.push_back(std::make_unique<ModelChunk<double>>(cfg.model, layout, part.chunk(stage, c), cfg.micro_batch,
                                                          cfg.activation_policy(), memory, nullptr, cfg.slice(0),
                                                          c ? chunks[0]->workspace() : nullptr));
    ptrs.push_back(chunks.back().get());
    if (c == 0) one_workspace = memory.current(Mem::workspace) - before;
  }
  // The v chunks of a stage share one workspace (they never run at once): v × the scratch would be waste.
  REQUIRE(one_workspace > 0);
  REQUIRE(memory.current(Mem::workspace) - workspace_before == one_workspace);
  PipelineStage<double> pipeline(part, stage, ptrs, cfg.layout.pp > 1 ? &grid.comm(Axis::pp) : nullptr, memory);

  const int B = cfg.micro_batch, per_rank = cfg.global_batch / dp, m = per_rank / B;
  REQUIRE(m == l.m);
  const double tokens = double(cfg.global_batch) * cfg.model.seq;
  const std::vector<StageActions> schedule = make_schedule(l.kind, cfg.layout.pp, m, cfg.layout.virtual_stages);
  engine.begin_step();
  MicroBatchSource source;
  source.samples = [&](int) { return B; };
  source.draw = [&](int k, std::vector<int32_t>& inputs, std::vector<int32_t>& targets) {
    const uint64_t first = uint64_t(dp_rank) * per_rank + uint64_t(k) * B;
    fill_tokens(cfg.model, first, B, inputs, targets);
    return MicroBatch{k, B, inputs.data(), targets.data(), {cfg.run.seed, kStep, first}};
  };
  const uint64_t seq0 = comm.next_seq();
  StageRun out;
  out.stage = stage;
  out.dp_rank = dp_rank;
  out.local_loss = pipeline.run(schedule[stage], engine, m, 1.0 / tokens, source, true,
                                [&](bool last) { engine.begin_backward(last); });
  const uint64_t seq1 = comm.next_seq();
  engine.finish_gradients();
  out.loss = engine.sums().over_ranks(out.local_loss) / tokens;
  out.gnorm = engine.grad_norm();

  const size_t elements = size_t(B) * cfg.model.seq * cfg.model.hidden;
  for (const CommCall& c : comm.calls()) {
    if (c.seq < seq0 || c.seq >= seq1) continue;
    const bool p2p = c.op == "send" || c.op == "recv";
    if (p2p != (c.axis == Axis::pp)) ++out.other_pp_p2p;  // during run(): only p2p, only on pp
    if (!p2p) continue;
    (c.op == "send" ? out.sends : out.recvs) += 1;
    out.bad_sizes += c.elements != elements;
    out.bad_bytes += c.elem_bytes != sizeof(double);
    out.sent += c.sent();
    out.received += c.recv();
  }
  FlatStore<double>& G = engine.states().grads();
  for (const TensorSpec& t : layout.tensors()) {
    REQUIRE(t.offset >= G.begin());
    REQUIRE(t.offset + t.numel <= G.end());
    out.grads.push_back({t.name, std::vector<double>(G.t(t.offset), G.t(t.offset) + t.numel)});
  }
  return out;
}

// Chunk borders a stage's chunks touch: activations it sends (k < K − 1) and gradients it sends (k > 0).
size_t borders_touched(int stage, int p, int v) {
  size_t n = 0;
  for (int c = 0; c < v; ++c) {
    const int k = c * p + stage;
    n += (k < p * v - 1) + (k > 0);
  }
  return n;
}

void check_layout(const Layout& l, int world) {
  TrainConfig cfg = pipeline_config();
  const int dp = world / l.pp;
  cfg.layout.pp = l.pp;
  cfg.layout.schedule = l.kind;
  cfg.layout.virtual_stages = l.v;
  REQUIRE(parse_layer_counts(l.pp_layers, &cfg.layout.pp_layers).empty());
  cfg.global_batch = dp * l.m * cfg.micro_batch;
  REQUIRE(pipeline_problem(cfg.model.layers, l.pp, l.v, cfg.layout.schedule, cfg.layout.pp_layers).empty());
  REQUIRE(validate_world(cfg, world).empty());
  const bool bitwise = dp == 1;
  const ParamLayout whole(cfg.model);
  const Reference ref = single_process(cfg, dp * l.m);
  const StageRun run = pipeline_step(cfg, l);
  INFO(label(l, dp) << ", stage " << run.stage << ", dp rank " << run.dp_rank);

  // Loss and gradient norm.
  INFO("loss " << run.loss << " vs one process " << ref.loss << " (diff " << run.loss - ref.loss << "), norm "
               << run.gnorm << " vs " << ref.gnorm << " (diff " << run.gnorm - ref.gnorm << ")");
  if (bitwise) {
    CHECK(run.loss == ref.loss);
    CHECK(run.gnorm == ref.gnorm);
  } else {
    CHECK(std::fabs(run.loss - ref.loss) <= kRtol * std::fabs(ref.loss));
    CHECK(std::fabs(run.gnorm - ref.gnorm) <= kRtol * ref.gnorm);
  }
  if (run.stage != l.pp - 1) CHECK(run.local_loss == 0.0);  // only the last stage holds the head
  if (run.stage == l.pp - 1) CHECK(run.local_loss > 0.0);

  // Gradients, element by element, mapped by tensor name.
  size_t compared = 0, differing = 0, past_tolerance = 0;
  double worst = 0;
  std::string worst_tensor;
  for (const auto& [name, g] : run.grads) {
    const TensorSpec& w = whole.find(name);
    REQUIRE(g.size() == w.numel);
    double scale = 0;
    for (size_t i = 0; i < w.numel; ++i) scale = test::worst_of(scale, std::fabs(ref.grads[w.offset + i]));
    for (size_t i = 0; i < w.numel; ++i) {
      const double want = ref.grads[w.offset + i], diff = std::fabs(g[i] - want);
      ++compared;
      differing += std::memcmp(&g[i], &want, sizeof(double)) != 0;
      past_tolerance += !(diff <= kRtol * scale);
      if (scale > 0 && !(diff / scale <= worst)) {
        worst = diff / scale;
        worst_tensor = name;
      }
    }
  }
  INFO(compared << " gradient elements compared, " << differing << " not bit-identical, " << past_tolerance
                << " past 1e-12; worst relative difference " << worst << " in " << worst_tensor);
  CHECK(compared > 0);
  if (bitwise) CHECK(differing == 0);
  CHECK(past_tolerance == 0);

  // The stages together hold every tensor once.
  ProcessGrid grid(GridSizes{0, 1, l.pp, 1, 1}, 0, nullptr, nullptr, CommImpl::ring);
  uint64_t covered = 0;
  for (uint64_t n : grid.comm(Axis::pp).all_gather_value<uint64_t>(compared)) covered += n;
  CHECK(covered == whole.total());

  // The comm ledger's pp traffic.
  const uint64_t message = uint64_t(cfg.micro_batch) * cfg.model.seq * cfg.model.hidden * sizeof(double);
  const size_t borders = borders_touched(run.stage, l.pp, l.v);
  INFO("pp ledger: " << run.sends << " sends (" << run.sent << " B), " << run.recvs << " receives (" << run.received
                     << " B); " << borders << " chunk borders touched");
  CHECK(run.other_pp_p2p == 0);
  CHECK(run.bad_sizes == 0);
  CHECK(run.bad_bytes == 0);
  CHECK(run.sends == borders * l.m);
  CHECK(run.recvs == borders * l.m);
  CHECK(run.sent == borders * l.m * message);
  CHECK(run.received == borders * l.m * message);
  if (l.v == 1)  // per stage boundary m·B·T·C·8 each way
    CHECK(run.sent == ((run.stage > 0) + (run.stage < l.pp - 1)) * l.m * message);
  uint64_t total_sent = 0;
  for (uint64_t b : grid.comm(Axis::pp).all_gather_value<uint64_t>(run.sent)) total_sent += b;
  CHECK(total_sent == 2 * uint64_t(l.pp * l.v - 1) * l.m * message);
}

}  // namespace

TEST_CASE("pipeline: one step through PipelineStage equals one process bit for bit (f64, dropout on)", "[pipeline]") {
  const int W = world_size();
  if (W != 2 && W != 4) return;  // pp 2 (world 2), pp 4 and pp 2 × dp 2 (world 4)
  const ScheduleKind G = ScheduleKind::gpipe, F = ScheduleKind::one_f_one_b, I = ScheduleKind::interleaved;
  const std::vector<Layout> at2 = {{2, G, 1, 4, ""},    {2, G, 1, 1, ""},   {2, F, 1, 4, ""}, {2, F, 1, 1, ""},
                                   {2, F, 1, 3, ""},    {2, I, 2, 4, ""},   {2, I, 2, 2, ""}, {2, I, 4, 2, ""},
                                   {2, F, 1, 4, "3,5"}, {2, G, 1, 3, "1,7"}};
  const std::vector<Layout> at4 = {{4, G, 1, 4, ""},        {4, G, 1, 3, ""}, {4, F, 1, 4, ""}, {4, F, 1, 2, ""},
                                   {4, F, 1, 6, "1,2,2,3"}, {4, I, 2, 4, ""}, {4, I, 2, 8, ""}, {2, G, 1, 2, ""},
                                   {2, F, 1, 3, ""},        {2, I, 2, 2, ""}};  // the last three: pp 2 × dp 2
  const std::vector<Layout>& layouts = W == 2 ? at2 : at4;
  for (const Layout& l : layouts) check_layout(l, W);
}
