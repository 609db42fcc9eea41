// Pipeline schedules as data (claims C20, C21): for each stage, the ordered actions it runs in one
// optimizer step — receive a micro-batch's activation, run a chunk's forward, send its output; receive the
// output's gradient, run the backward, send the input's gradient. One executor (parallel/pipeline.h) runs
// any such list; the same list is simulated here for its ideal timeline, bubble and stash, printed as a
// text grid (`shardlab schedule`) and drawn (report/schedule_svg.h).
//   gpipe        all m forwards, then all m backwards: stashes m micro-batches;
//   1f1b         warmup: p − s − 1 forwards; steady: one forward, one backward; cooldown: the remaining
//                backwards — a micro-batch's activations are freed right after its backward, so stage s
//                stashes at most p − s (≤ p) micro-batches, with the same bubble (p−1)/(m+p−1);
//   interleaved  every stage holds v model chunks (Megatron's virtual pipeline); micro-batches go through
//                in groups of p, each visiting every stage v times: bubble (p−1)/(v·m) over the ideal time,
//                p·v − 1 chunk borders to cross instead of p − 1 (a little more than v× the messages).
// Backwards run in micro-batch order on every chunk, so each stage accumulates its gradients in the order
// the single process does: every schedule is bit-identical to it.
#pragma once
#include <string>
#include <vector>

#include "core/spelling.h"

namespace shardlab {

// The most micro-batches × stages × chunks per stage one step runs (the trainer's pipeline messages must be
// told apart; what a ledger's pipeline section may claim).
constexpr int kMaxPipelineSlots = 8192;

enum class ScheduleKind { gpipe, one_f_one_b, interleaved };
inline constexpr Spelling<ScheduleKind> kScheduleWords[] = {
    {"gpipe", ScheduleKind::gpipe}, {"1f1b", ScheduleKind::one_f_one_b}, {"interleaved", ScheduleKind::interleaved}};
bool parse_schedule(const std::string& name, ScheduleKind* out);  // gpipe | 1f1b | interleaved
const char* schedule_name(ScheduleKind k);

enum class Act { recv_activation, forward, send_activation, recv_gradient, backward, send_gradient };
const char* act_name(Act a);

struct Action {
  Act act;
  int micro_batch;
  int chunk;  // this stage's model chunk (0 … v−1); model chunk k = chunk·p + stage
};
using StageActions = std::vector<Action>;

// The actions of every stage for one step of m micro-batches on p stages with v chunks per stage.
// gpipe and 1f1b: v = 1; interleaved: v ≥ 2 and m a multiple of p (else std::invalid_argument).
std::vector<StageActions> make_schedule(ScheduleKind kind, int p, int m, int v);
// Forwards only (evaluation): micro-batch after micro-batch through every chunk, nothing kept for a
// backward (any m, whatever p divides).
std::vector<StageActions> forward_only_schedule(int p, int m, int v);

// The schedule played out with a stage's forward (all its v chunks) taking `forward` time units and its
// backward `backward` units — one chunk's forward/v and backward/v — messages arriving as they are sent.
// Per stage: every compute action's start and end, busy time, and the largest number of activation
// records alive at once (the stash: micro-batches, or (micro-batch, chunk) pairs when v > 1). A schedule
// that would deadlock, sends a message twice, runs a backward before its forward, or leaves a
// micro-batch out on some stage or chunk is not complete, and `problem` says why.
struct Slot {
  Act act;  // forward or backward
  int micro_batch, chunk;
  double start, end;
};
struct Timeline {
  std::vector<std::vector<Slot>> stages;
  double makespan = 0;
  std::vector<double> busy;        // per stage
  std::vector<int> stash;          // per stage: records whose forward ran and backward has not (peak)
  int micro_batches = 0;           // M: every stage ran micro-batches 0 … M−1 on each of its chunks
  bool complete = false;           // every action ran (false: the schedule would deadlock)
  std::string problem;             // why not, or a broken rule (a backward before its forward, …)
  double bubble_fraction() const;  // idle / (stages · makespan)
};
Timeline simulate(const std::vector<StageActions>& schedule, int v, double forward, double backward);

// One row per stage, one cell per time unit: "F3" a forward, "B3" a backward (two cells when it costs two),
// with the chunk as a letter (a, b, …) when v > 1, "." idle.
std::string schedule_grid(const Timeline& t, int v, double unit);

// "" if a schedule of this kind runs m micro-batches on p stages with v chunks each, else why not
// (interleaved needs v ≥ 2 and m a multiple of p; the others one chunk per stage).
std::string schedule_shape_problem(ScheduleKind kind, int p, int m, int v);

// The chapter's formulas: (p−1)/(m+p−1) of the time idle (GPipe, 1F1B); interleaved (p−1)/(v·m) over
// the ideal time, i.e. (p−1)/(v·m + p−1) of the time.
double bubble_formula(ScheduleKind kind, int p, int m, int v);

}  // namespace shardlab
