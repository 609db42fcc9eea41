// The pipeline executor: one stage's actions, its messages and its measured timeline (see pipeline.h).
#include "parallel/pipeline.h"

#include <chrono>
#include <iterator>
#include <stdexcept>

namespace shardlab {

// A tag is ((gradient ? K : 0) + model chunk) · m + micro-batch < 2 · K · m ≤ 2 · kMaxPipelineSlots.
static_assert(2 * kMaxPipelineSlots <= Communicator::kMaxUserTag + 1, "pipeline tags would reach the collectives'");

namespace {
double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

template <class T>
PipelineStage<T>::PipelineStage(const PipelinePartition& part, int stage, std::vector<ModelChunk<T>*> chunks,
                                Communicator* pp, MemoryLedger& ledger)
    : part_(part), stage_(stage), chunks_(std::move(chunks)), pp_(pp), ledger_(ledger) {}

template <class T>
class PipelineStage<T>::Progressing : public UnitAccess<T> {
 public:
  Progressing(PipelineStage& stage, UnitAccess<T>& inner) : stage_(stage), inner_(inner) {}
  const T* params(int unit, bool backward) override { return inner_.params(unit, backward); }
  void params_done(int unit, bool backward) override {
    inner_.params_done(unit, backward);
    stage_.drop_sent();
  }
  T* grads(int unit) override { return inner_.grads(unit); }
  RowSplit split(int unit, int samples) override { return inner_.split(unit, samples); }
  ExactSum* exact_sums(int unit) override { return inner_.exact_sums(unit); }
  void grads_done(int unit) override {
    inner_.grads_done(unit);
    stage_.drop_sent();
  }

 private:
  PipelineStage& stage_;
  UnitAccess<T>& inner_;
};

template <class T>
const MicroBatch& PipelineStage<T>::batch(int i, const MicroBatchSource& source) {
  auto it = tokens_.find(i);
  if (it == tokens_.end()) {
    Tokens& t = tokens_[i];
    t.mb = source.draw(i, t.inputs, t.targets);
    t.mb.id = i;
    return t.mb;
  }
  return it->second.mb;
}

// A message holds one micro-batch's activations at a chunk border: its samples × this rank's positions × C.
template <class T>
size_t PipelineStage<T>::message_elements(int chunk, int samples) const {
  const ModelChunk<T>& c = *chunks_[chunk];
  const BlockDims d = c.dims(samples, c.spec().first_block);
  return d.rows() * static_cast<size_t>(d.C);
}

// Tags tell the messages of one step apart: activations into model chunk k, then gradients into it.
template <class T>
int PipelineStage<T>::tag(bool gradient, int to_model_chunk, int micro_batch, int m) const {
  const int K = static_cast<int>(part_.chunks.size());
  return ((gradient ? K : 0) + to_model_chunk) * m + micro_batch;
}

template <class T>
void PipelineStage<T>::post_receive(bool gradient, const Action& a, int m, const MicroBatchSource& source) {
  auto& inbox = gradient ? gradients_in_ : activations_in_;
  const Key key{a.micro_batch, a.chunk};
  if (inbox.count(key)) return;
  const int k = part_.model_chunk(stage_, a.chunk), from = gradient ? k + 1 : k - 1;
  const size_t n = message_elements(a.chunk, source.samples(a.micro_batch));
  Incoming& in = inbox[key];
  in.buffer = Buffer<T>(ledger_, Mem::comm_buffer, n, 0, nullptr, false);
  in.receiving = pp_->start_recv(in.buffer.data(), n, peer(from), tag(gradient, k, a.micro_batch, m));
}

// The receive at actions[index]: waited for here; the next one of the same kind is posted at once.
template <class T>
void PipelineStage<T>::receive(const StageActions& actions, size_t index, int m, const MicroBatchSource& source) {
  const Action& a = actions[index];
  const bool gradient = a.act == Act::recv_gradient;
  post_receive(gradient, a, m, source);
  Incoming& in = (gradient ? gradients_in_ : activations_in_)[{a.micro_batch, a.chunk}];
  pp_->wait(in.receiving);
  in.arrived = true;
  for (size_t j = index + 1; j < actions.size(); ++j)
    if (actions[j].act == a.act) {
      post_receive(gradient, actions[j], m, source);
      break;
    }
}

template <class T>
typename PipelineStage<T>::Outgoing& PipelineStage<T>::outgoing(bool gradient, Key key, size_t n) {
  outbox_.push_back(Outgoing{key, gradient, Buffer<T>(ledger_, Mem::comm_buffer, n, 0, nullptr, false), {}});
  return outbox_.back();
}

template <class T>
void PipelineStage<T>::send(bool gradient, const Action& a, int m) {
  const int k = part_.model_chunk(stage_, a.chunk), to = gradient ? k - 1 : k + 1;
  for (Outgoing& o : outbox_)
    if (o.key == Key{a.micro_batch, a.chunk} && o.gradient == gradient && !o.posted) {
      o.sending = pp_->start_send(o.buffer.data(), o.buffer.size(), peer(to), tag(gradient, to, a.micro_batch, m));
      o.posted = true;
      return;
    }
  throw std::logic_error("pipeline: a send before the compute that produces it");
}

// Finished sends free their buffers (and every other operation in flight moves on).
template <class T>
void PipelineStage<T>::drop_sent() {
  for (auto it = outbox_.begin(); it != outbox_.end();)
    it = it->posted && pp_->progress(it->sending) ? outbox_.erase(it) : std::next(it);
}

template <class T>
double PipelineStage<T>::run(const StageActions& actions, UnitAccess<T>& weights, int m, T loss_scale,
                             const MicroBatchSource& source, bool train,
                             const std::function<void(bool last)>& before_backward) {
  Progressing access(*this, weights);
  double loss = 0.0;
  measured_.clear();
  tokens_.clear();
  for (Act kind : {Act::recv_activation, Act::recv_gradient})  // the first receive of each kind, posted now
    for (const Action& a : actions)
      if (a.act == kind) {
        post_receive(kind == Act::recv_gradient, a, m, source);
        break;
      }
  for (size_t index = 0; index < actions.size(); ++index) {
    const Action& a = actions[index];
    const Key key{a.micro_batch, a.chunk};
    ModelChunk<T>& chunk = *chunks_[a.chunk];
    switch (a.act) {
      case Act::recv_activation:
      case Act::recv_gradient: receive(actions, index, m, source); break;
      case Act::send_activation: send(false, a, m); break;
      case Act::send_gradient: send(true, a, m); break;
      case Act::forward: {
        const MicroBatch& mb = batch(a.micro_batch, source);
        auto in = activations_in_.find(key);
        if (!chunk.spec().embedding && (in == activations_in_.end() || !in->second.arrived))
          throw std::logic_error("pipeline: a forward before its activation arrived");
        T* x_out = chunk.spec().head ? nullptr : outgoing(false, key, message_elements(a.chunk, mb.B)).buffer.data();
        const double t0 = now_us();
        loss += chunk.forward(mb, access, in == activations_in_.end() ? nullptr : in->second.buffer.data(), x_out);
        measured_.push_back({Act::forward, a.micro_batch, a.chunk, t0, now_us()});
        if (in != activations_in_.end()) activations_in_.erase(in);  // the chunk copied it into its record
        if (!train) chunk.release(a.micro_batch);
        break;
      }
      case Act::backward: {
        auto g = gradients_in_.find(key);
        if (!chunk.spec().head && (g == gradients_in_.end() || !g->second.arrived))
          throw std::logic_error("pipeline: a backward before its output's gradient arrived");
        T* d_in = chunk.spec().embedding
                      ? nullptr
                      : outgoing(true, key, message_elements(a.chunk, source.samples(a.micro_batch))).buffer.data();
        if (before_backward) before_backward(a.micro_batch == m - 1);  // the chunk's last backward: sync starts
        const double t0 = now_us();
        chunk.backward(a.micro_batch, access, loss_scale, g == gradients_in_.end() ? nullptr : g->second.buffer.data(),
                       d_in);
        measured_.push_back({Act::backward, a.micro_batch, a.chunk, t0, now_us()});
        if (g != gradients_in_.end()) gradients_in_.erase(g);
        break;
      }
    }
    drop_sent();
  }
  for (Outgoing& o : outbox_) {
    if (!o.posted) throw std::logic_error("pipeline: a chunk's output was never sent");
    pp_->wait(o.sending);
  }
  outbox_.clear();
  tokens_.clear();
  return loss;
}

template class PipelineStage<float>;
template class PipelineStage<double>;

}  // namespace shardlab
