// The pipeline executor (claims C20–C22): one stage runs any schedule's action list (parallel/schedule.h)
// over its model chunks — receive a micro-batch's activation from the previous stage, run the chunk's
// forward, send its output to the next stage; receive the output's gradient, run the backward, send the
// input's gradient back. Messages travel point to point on the pp axis (counted in the comm ledger as
// send/recv); every send is posted without waiting for it, so no schedule deadlocks on large messages, and
// the buffer stays alive until the send completes; the stage moves its own sends on between units, while its
// chunks compute. It knows nothing of the data-parallel engine: it gets the weights and gradients through
// UnitAccess, and a callback before each backward says whether it is the chunk's last one of the step (the
// engine starts gradient synchronisation then, not after the last forward). Messages are sized from the
// chunk and the micro-batch's sample count alone (no data is drawn for a receive), and their tags stay below
// Communicator::kMaxUserTag for every run kMaxPipelineSlots allows (schedule.h, the one bound).
// Each receive is posted one ahead — as soon as the previous receive of the same kind (activation or
// gradient) has arrived — so a message finds its receive waiting and MPI delivers it while the sending
// stage computes (a message that arrives unannounced waits for its sender's next call into MPI).
// With one stage and one chunk the 1F1B list is forward, backward, forward, … — the single process's loop.
// Leaves out: overlapping compute with the receive it needs (that one is waited for where the schedule says).
#pragma once
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <utility>
#include <vector>

#include "comm/communicator.h"
#include "model/model_chunk.h"
#include "model/unit_access.h"
#include "parallel/pipeline_partition.h"
#include "parallel/schedule.h"

namespace shardlab {

// A measured compute action: steady-clock microseconds (one clock for every process of a machine).
struct MeasuredSlot {
  Act act;
  int micro_batch, chunk;
  double start_us, end_us;
};

// The micro-batches of one pass: how many samples micro-batch i holds (sizes its messages), and the
// micro-batch itself, its tokens drawn into the given vectors (only where a chunk computes on it).
struct MicroBatchSource {
  std::function<int(int i)> samples;
  std::function<MicroBatch(int i, std::vector<int32_t>& inputs, std::vector<int32_t>& targets)> draw;
};

template <class T>
class PipelineStage {
 public:
  // chunks[c]: this stage's model chunk c (model chunk c·p + stage); pp: the pipeline group (null: p = 1).
  PipelineStage(const PipelinePartition& part, int stage, std::vector<ModelChunk<T>*> chunks, Communicator* pp,
                MemoryLedger& ledger);

  // One pass over `actions` for m micro-batches, computing through `weights`. Training runs the backwards too
  // (loss_scale: the one loss normalisation; before_backward(last) before each, last = the chunk's last backward
  // of the step); evaluation (train = false) runs forwards only and frees each record after it. Returns Σ of
  // the token losses this stage's head computed (0 on the other stages).
  double run(const StageActions& actions, UnitAccess<T>& weights, int m, T loss_scale, const MicroBatchSource& source,
             bool train, const std::function<void(bool last)>& before_backward = {});
  const std::vector<MeasuredSlot>& measured() const { return measured_; }  // the last run's compute actions
  // The exact mode: the loss terms of the forwards since the last take, over the stage's chunks (order-free).
  ExactSum take_loss_terms() {
    ExactSum s;
    for (ModelChunk<T>* c : chunks_) exact_merge(s, c->take_loss_terms());
    return s;
  }
  int stage() const { return stage_; }

 private:
  using Key = std::pair<int, int>;  // (micro-batch, chunk)
  struct Tokens {
    std::vector<int32_t> inputs, targets;
    MicroBatch mb;
  };
  // In both: the Pending after the Buffer, so that it is destroyed first — it waits for the message
  // before the buffer the message lands in (or leaves from) is freed.
  struct Incoming {
    Buffer<T> buffer;
    Communicator::Pending receiving;
    bool arrived = false;  // the schedule's receive action has waited for it
  };
  struct Outgoing {
    Key key;
    bool gradient;
    Buffer<T> buffer;
    Communicator::Pending sending;
    bool posted = false;
  };
  class Progressing;  // the caller's UnitAccess, moving this stage's sends on between units
  const MicroBatch& batch(int i, const MicroBatchSource& source);
  size_t message_elements(int chunk, int samples) const;
  int peer(int model_chunk) const { return part_.stage_of(model_chunk); }
  int tag(bool gradient, int to_model_chunk, int micro_batch, int m) const;
  void post_receive(bool gradient, const Action& a, int m, const MicroBatchSource& source);
  void receive(const StageActions& actions, size_t index, int m, const MicroBatchSource& source);
  Outgoing& outgoing(bool gradient, Key key, size_t n);
  void send(bool gradient, const Action& a, int m);
  void drop_sent();

  const PipelinePartition& part_;
  int stage_;
  std::vector<ModelChunk<T>*> chunks_;
  Communicator* pp_;
  MemoryLedger& ledger_;
  std::map<int, Tokens> tokens_;
  std::map<Key, Incoming> activations_in_, gradients_in_;
  std::list<Outgoing> outbox_;
  std::vector<MeasuredSlot> measured_;
};

}  // namespace shardlab
