// Trace: per-rank compute and communication events with timestamps, written as one Chrome trace
// JSON (DIR/trace.json) that Perfetto (ui.perfetto.dev) and chrome://tracing open as a timeline
// with one track per rank. Times are microseconds since the trace's start (a barrier), taken from
// the monotonic clock, which all ranks on one machine share.
#pragma once
#include <chrono>
#include <string>
#include <vector>

namespace shardlab {

struct TraceEvent {
  std::string name;
  std::string cat;  // "compute" | "comm" | "step"
  double begin_us, end_us;
  int lane = 0;  // 0: the rank's main track; 1: communication in flight (non-blocking); 2: steps
};

class Trace {
 public:
  explicit Trace(bool enabled = false) : enabled_(enabled) { restart(); }
  bool enabled() const { return enabled_; }
  void restart() { t0_ = std::chrono::steady_clock::now(); }
  double now_us() const {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0_).count();
  }
  void add(const std::string& name, const char* cat, double begin_us, double end_us, int lane = 0) {
    if (enabled_) events_.push_back({name, cat, begin_us, end_us, lane});
  }
  const std::vector<TraceEvent>& events() const { return events_; }
  // This rank's events as JSON trace events with pid = rank (one track per rank).
  std::string to_json_events(int rank) const;

  // RAII span: Trace::Span s(trace, "forward block 3", "compute");
  class Span {
   public:
    Span(Trace& t, std::string name, const char* cat, int lane = 0)
        : t_(t), name_(std::move(name)), cat_(cat), lane_(lane), begin_(t.enabled() ? t.now_us() : 0) {}
    ~Span() {
      if (t_.enabled()) t_.add(name_, cat_, begin_, t_.now_us(), lane_);
    }

   private:
    Trace& t_;
    std::string name_;
    const char* cat_;
    int lane_;
    double begin_;
  };

 private:
  bool enabled_;
  std::chrono::steady_clock::time_point t0_;
  std::vector<TraceEvent> events_;
};

// Joins every rank's events (rank order) into one Chrome trace document.
std::string trace_document(const std::vector<std::string>& per_rank_events);

}  // namespace shardlab
