// A model chunk's forward and backward over its units (see model_chunk.h).
#include "model/model_chunk.h"

#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/flops.h"
#include "model/embedding.h"
#include "model/whole_samples.h"

namespace shardlab {

template <class T>
struct ModelChunk<T>::Records {
  MicroBatch mb;
  std::vector<int32_t> inputs, targets;  // this rank's copy of the micro-batch's tokens
  std::vector<BlockRecord<T>> blocks;
  HeadRecord<T> head;
};

template <class T>
ModelChunk<T>::ModelChunk(const GPTConfig& cfg, const ParamLayout& layout, ChunkSpec spec, int capacity,
                          ActivationPolicy policy, MemoryLedger& ledger, ChunkHooks<T>* hooks, ModelSlice slice,
                          std::shared_ptr<ChunkWorkspace<T>> workspace)
    : cfg_(cfg),
      layout_(layout),
      spec_(spec),
      capacity_(capacity),
      policy_(policy),
      ledger_(ledger),
      hooks_(hooks ? hooks : &identity_),
      slice_(slice),
      workspace_(std::move(workspace)) {
  if (spec.end_block <= spec.first_block) throw std::invalid_argument("a model chunk holds at least one block");
  const BlockDims d = dims(capacity, 0);
  if (!workspace_) workspace_ = std::make_shared<ChunkWorkspace<T>>(d, policy, ledger);
  if (!workspace_->fits(d, policy)) throw std::logic_error("a model chunk given a workspace sized for other blocks");
  ws_ = workspace_->scratch();
}

template <class T>
ModelChunk<T>::~ModelChunk() = default;

template <class T>
BlockDims ModelChunk<T>::dims(int B, int layer) const {
  BlockDims d;
  d.B = B;
  d.T = cfg_.seq;
  d.C = cfg_.hidden;
  d.HD = cfg_.head_dim();
  d.NH = cfg_.heads / slice_.tp;
  d.F = 4 * cfg_.hidden / slice_.tp;
  d.T_ctx = slice_.T_ctx(cfg_.seq);
  d.pos = slice_.positions(cfg_.seq);
  d.T_local = slice_.sequence_parallel ? d.T_ctx / slice_.tp : d.T_ctx;
  d.heads_total = cfg_.heads;
  d.first_head = slice_.tp_rank * d.NH;
  d.first_row = slice_.sequence_parallel ? slice_.tp_rank * d.T_local : 0;
  d.layer = layer;
  if (cfg_.moe.in_block(layer)) {
    d.experts = cfg_.moe.experts;
    d.top_k = cfg_.moe.top_k;
    d.expert_ffn = cfg_.moe.width(cfg_.hidden);
    d.capacity = cfg_.moe.slots_per_sample(cfg_.seq);
    d.local_experts = d.experts / slice_.ep;
    d.first_expert = slice_.ep_rank * d.local_experts;
  }
  return d;
}

template <class T>
BlockRun ModelChunk<T>::run_of(const Records& r) const {
  return BlockRun{policy_, r.mb.train ? cfg_.dropout : 0.0, r.mb.drop};
}

namespace {
// Addresses one unit's tensors by their flat-layout offsets.
template <class P>
struct UnitPtr {
  P base;
  size_t begin;
  P operator()(size_t offset) const { return base + (offset - begin); }
};
}  // namespace

template <class T>
double ModelChunk<T>::forward(const MicroBatch& mb, UnitAccess<T>& access, const T* x_in, T* x_out) {
  if (mb.B <= 0 || mb.B > capacity_)
    throw std::invalid_argument("micro-batch of " + std::to_string(mb.B) + " samples, chunk built for " +
                                std::to_string(capacity_));
  if (records_.count(mb.id)) throw std::logic_error("micro-batch " + std::to_string(mb.id) + " is already in flight");
  auto rp = std::make_unique<Records>();
  Records& r = *rp;
  records_[mb.id] = std::move(rp);
  r.mb = mb;
  const int Tn = cfg_.seq, C = cfg_.hidden, B = mb.B;
  const BlockDims d0 = dims(B, spec_.first_block);
  const size_t R = d0.rows();
  const int Tl = d0.T_local, t0 = d0.first_row, Tc = d0.T_ctx;
  // This rank's tokens of each sample (all of them without context parallelism), inputs and targets at the
  // same global positions: the labels were shifted before the split. The head needs every one of them (with
  // sequence parallelism the vocabulary-parallel head runs the tp region's rows, the whole T_ctx).
  auto local_tokens = [&](const int32_t* all, std::vector<int32_t>& mine) {
    mine.resize(size_t(B) * Tc);
    for (int b = 0; b < B; ++b)
      for (int i = 0; i < Tc; ++i) mine[size_t(b) * Tc + i] = all[size_t(b) * Tn + d0.pos.at(i)];
  };
  if (spec_.embedding) local_tokens(mb.inputs, r.inputs);
  BlockDims dh = d0;
  if (spec_.head) {
    dh.split = access.split(cfg_.layers + 1, B);
    if (runs_whole_samples(dh)) {  // the exact mode under cp: the head's products run this rank's whole samples
      const BlockDims w = region_of(dh);
      r.targets.assign(mb.targets + size_t(w.first_sample) * Tn, mb.targets + size_t(w.first_sample + w.B) * Tn);
    } else {
      local_tokens(mb.targets, r.targets);
    }
  }
  BlockRun run = run_of(r);
  if (mb.train) run.moe_stats = &moe_stats_;
  const int nblocks = spec_.end_block - spec_.first_block;
  r.blocks.resize(nblocks);
  MoeForwardRows* moe_rows = nullptr;  // the rows this forward's MoE records are allocated for
  for (int l = spec_.first_block; l < spec_.end_block && !moe_rows; ++l)
    if (cfg_.moe.in_block(l)) moe_rows = &moe_rows_.emplace_back(MoeForwardRows{mb.train, B, {}});

  // The first block's input: the embedding, or the previous chunk's output.
  r.blocks[0].x = Saved<T>(ledger_, "block.x", R * C, policy_.bf16);
  T* x0 = produce(r.blocks[0].x, ws_.x);
  if (spec_.embedding) {
    UnitPtr<const T*> P{access.params(0, false), layout_.unit_begin(0)};
    embedding_forward(x0, r.inputs.data(), P(layout_.tok_emb), P(layout_.pos_emb), B, Tc, C, t0, Tl,
                      d0.pos);  // per row
    access.params_done(0, false);
  } else {
    std::memcpy(static_cast<void*>(x0), x_in, R * C * sizeof(T));
  }
  keep(r.blocks[0].x, x0);

  for (int i = 0; i < nblocks; ++i) {
    const int l = spec_.first_block + i, unit = l + 1;
    BlockRecord<T>& rec = r.blocks[i];
    BlockDims d = dims(B, l);
    d.split = access.split(unit, B);
    const auto w = BlockTensors<const T*>::at(access.params(unit, false), layout_.unit_begin(unit), layout_.blocks[l]);
    allocate_block_record(rec, d, policy_, ledger_);
    Saved<T>* next = i + 1 < nblocks ? &r.blocks[i + 1].x : spec_.head ? &r.head.x : nullptr;
    T* out = x_out;
    if (next) {
      *next = Saved<T>(ledger_, i + 1 < nblocks ? "block.x" : "head.x", R * C, policy_.bf16);
      out = produce(*next, ws_.x);
    }
    {
      FlopPhase phase(Flop::block_forward);
      block_forward(rec, out, w, d, run, ws_, *hooks_, ledger_);
    }
    if (next) keep(*next, out);
    if (d.experts > 0) {  // the sizes moe_forward allocated the record's rows with
      const ExpertRows& er = rec.moe.rows;
      const int own = size_t(slice_.ep_rank) < er.sent.size() ? er.sent[slice_.ep_rank] : 0;
      moe_rows->blocks.push_back({rec.moe.routing.kept, er.rows(), own});
    }
    access.params_done(unit, false);
  }
  if (!spec_.head) return 0.0;
  return head_forward(r.head, r.targets.data(), access, layout_, cfg_, slice_, dh, policy_.bf16, ws_, *hooks_, ledger_,
                      dh.split.exact ? &loss_terms_ : nullptr);
}

template <class T>
void ModelChunk<T>::backward(int mb_id, UnitAccess<T>& access, T loss_scale, const T* d_out, T* d_in) {
  auto it = records_.find(mb_id);
  if (it == records_.end())
    throw std::logic_error("backward of micro-batch " + std::to_string(mb_id) + " without its forward");
  Records& r = *it->second;
  const int C = cfg_.hidden, B = r.mb.B;
  const BlockDims d0 = dims(B, spec_.first_block);
  const size_t R = d0.rows();
  BlockRun run = run_of(r);
  // The router losses' weights: each sample's load-balancing loss α/(samples of the global batch) = α·T·loss_scale,
  // each token's lse² β/(tokens of the global batch) = β·loss_scale.
  run.aux_weight = cfg_.moe.aux_loss * cfg_.seq * double(loss_scale);
  run.z_weight = cfg_.moe.z_loss * double(loss_scale);
  auto done = [&](int u) {
    access.params_done(u, true);
    access.grads_done(u);
  };
  if (spec_.head) {  // ws_.d_res: d(the head's input)
    BlockDims dh = d0;
    dh.split = access.split(cfg_.layers + 1, B);  // before grads(): the exact mode's per-sample gradients
    head_backward(r.head, r.targets.data(), loss_scale, access, layout_, cfg_, slice_, dh, ws_, *hooks_, ledger_);
  } else {
    std::memcpy(static_cast<void*>(ws_.d_res), d_out, R * C * sizeof(T));
  }
  for (int i = spec_.end_block - spec_.first_block - 1; i >= 0; --i) {  // ws_.d_res holds d(output of block)
    const int l = spec_.first_block + i, unit = l + 1;
    const auto w = BlockTensors<const T*>::at(access.params(unit, true), layout_.unit_begin(unit), layout_.blocks[l]);
    BlockDims d = dims(B, l);
    d.split = access.split(unit, B);  // before grads(): the exact mode's per-sample gradients
    auto g = BlockTensors<T*>::at(access.grads(unit), layout_.unit_begin(unit), layout_.blocks[l]);
    ExactSum* unit_sums = access.exact_sums(unit);  // the exact mode: the tensors whole on every tp rank, per row
    BlockTensors<ExactSum*> sums{};
    if (unit_sums) sums = BlockTensors<ExactSum*>::at(unit_sums, layout_.unit_begin(unit), layout_.blocks[l]);
    {
      FlopPhase phase(Flop::block_backward);
      block_backward(g, w, r.blocks[i], d, run, ws_, *hooks_, ledger_, unit_sums ? &sums : nullptr);
    }
    done(unit);
  }
  if (spec_.embedding) {
    access.params(0, true);  // the embedding's backward reads no weights, but a unit is gathered for it all the same
    const RowSplit split = access.split(0, B);
    UnitPtr<T*> G{access.grads(0), layout_.unit_begin(0)};
    ExactSum* sums = access.exact_sums(0);
    UnitPtr<ExactSum*> X{sums, layout_.unit_begin(0)};
    embedding_backward(G(layout_.tok_emb), G(layout_.pos_emb), ws_.d_res, r.inputs.data(), B, d0.T_ctx, C, d0.first_row,
                       d0.T_local, d0.pos, split, sums ? X(layout_.tok_emb) : nullptr,
                       sums ? X(layout_.pos_emb) : nullptr);
    done(0);
  } else {
    std::memcpy(static_cast<void*>(d_in), ws_.d_res, R * C * sizeof(T));
  }
  records_.erase(it);
}

template <class T>
const T* ModelChunk<T>::probs(int mb_id) const {
  auto it = records_.find(mb_id);
  return it == records_.end() ? nullptr : it->second->head.probs.data();
}

template <class T>
void ModelChunk<T>::release(int mb_id) {
  records_.erase(mb_id);
}

template class ModelChunk<float>;
template class ModelChunk<double>;

}  // namespace shardlab
