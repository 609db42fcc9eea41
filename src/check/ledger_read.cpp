// check/ledger_read.cpp — reading a trainer's ledger.json (see ledger_read.h).
#include "check/ledger_read.h"

#include <stdexcept>
#include <string>
#include <tuple>

namespace shardlab::plan {

using u64 = std::uint64_t;

const Json& need(const Json& obj, const char* key, const std::string& where) {
  if (!obj.is_object() || !obj.contains(key))
    throw std::runtime_error(std::string("missing \"") + key + "\" in " + where);
  return obj.at(key);
}
u64 need_u64(const Json& obj, const char* key, const std::string& where) {
  const Json& v = need(obj, key, where);
  if (!v.is_number_unsigned()) throw std::runtime_error(where + "." + key + " must be a non-negative integer");
  return v.get<u64>();
}
u64 need_in(const Json& obj, const char* key, const std::string& where, u64 lo, u64 hi) {
  const u64 v = need_u64(obj, key, where);
  if (v < lo || v > hi)
    throw std::runtime_error(where + "." + key + " is " + std::to_string(v) + ", outside [" + std::to_string(lo) +
                             ", " + std::to_string(hi) + "]: no run writes that");
  return v;
}
std::string need_string(const Json& obj, const char* key, const std::string& where) {
  const Json& v = need(obj, key, where);
  if (!v.is_string()) throw std::runtime_error(where + "." + key + " must be a string");
  return v.get<std::string>();
}
Recipe read_recipe(const Json& model) {
  Recipe r;
  r.optimizer = need_word<Optimizer>(model, "optimizer", "model", parse_optimizer);
  r.dtype = need_word<Dtype>(model, "dtype", "model", parse_dtype);
  r.mixed = need_word<Mixed>(model, "mixed", "model", parse_mixed);
  if (r.mixed == Mixed::bf16) {  // only meaningful with mixed precision
    r.grad_accum = need_word<GradAccum>(model, "grad_accum_dtype", "model", parse_grad_accum);
    r.master = need_word<Master>(model, "master", "model", parse_master);
  }
  if (r.optimizer == Optimizer::sgd) {
    const Json& m = need(model, "momentum", "model");
    if (!m.is_number()) throw std::runtime_error("model.momentum must be a number");
    r.momentum = m.get<double>();
  }
  return r;
}

ActivationShape read_activation_shape(const Json& a) {
  const std::string w = "model.activations";
  ActivationShape s;
  s.seq = need_u64(a, "seq", w);
  s.micro_batch = need_u64(a, "micro_batch", w);
  s.hidden = need_u64(a, "hidden", w);
  s.heads = need_u64(a, "heads", w);
  s.layers = need_u64(a, "layers", w);
  s.vocab = need_u64(a, "vocab", w);
  s.width = need_u64(a, "width", w);
  s.stat_width = need_u64(a, "stat_width", w);
  if (!parse_attention_kernel(need_string(a, "attention", w), &s.attention))
    throw std::runtime_error("unknown model.activations.attention");
  if (!parse_recompute(need_string(a, "recompute", w), &s.recompute))
    throw std::runtime_error("unknown model.activations.recompute");
  if (a.contains("tp")) s.tp = need_u64(a, "tp", w);
  if (a.contains("sequence_parallel")) {
    if (!a.at("sequence_parallel").is_boolean())
      throw std::runtime_error(w + ".sequence_parallel must be true or false");
    s.sequence_parallel = a.at("sequence_parallel").get<bool>();
  }
  if (a.contains("cp")) s.cp = need_u64(a, "cp", w);
  // A model a run could have trained: whole heads, and sizes whose byte counts stay exact in 64 bits.
  for (const auto& [name, x, most] :
       {std::tuple{"seq", s.seq, u64(1) << 24}, std::tuple{"micro_batch", s.micro_batch, u64(1) << 24},
        std::tuple{"hidden", s.hidden, u64(1) << 24}, std::tuple{"heads", s.heads, u64(1) << 24},
        std::tuple{"layers", s.layers, u64(1) << 16}, std::tuple{"vocab", s.vocab, u64(1) << 24},
        std::tuple{"width", s.width, u64(8)}, std::tuple{"stat_width", s.stat_width, u64(8)}})
    if (x < 1 || x > most)
      throw std::runtime_error(w + "." + name + " = " + std::to_string(x) + " is not in [1, " + std::to_string(most) +
                               "]");
  if (s.hidden % s.heads != 0)
    throw std::runtime_error(w + ": heads " + std::to_string(s.heads) + " does not divide hidden " +
                             std::to_string(s.hidden));
  if (s.cp < 1 || s.cp > (u64(1) << 20) || s.seq % s.cp != 0)
    throw std::runtime_error(w + ": cp " + std::to_string(s.cp) + " does not split seq " + std::to_string(s.seq));
  if (s.tp < 1 || s.heads % s.tp != 0 || (s.sequence_parallel && s.positions() % s.tp != 0))
    throw std::runtime_error(w + ": tp " + std::to_string(s.tp) + " does not split these heads and sequence");
  return s;
}

// Sums comm.totals entries of ring reduce_scatter / all_gather / all_reduce on axis "dp" by op.
StepComm measured_dp_ring(const Json& rank, const std::string& where) {
  const Json& comm = need(rank, "comm", where);
  const Json& totals = need(comm, "totals", where + ".comm");
  if (!totals.is_array()) throw std::runtime_error(where + ".comm.totals must be an array");
  StepComm m;
  for (const Json& t : totals) {
    const std::string w = where + ".comm.totals[]";
    if (need_string(t, "axis", w) != "dp" || need_string(t, "impl", w) != "ring") continue;
    const std::string op = need_string(t, "op", w);
    for (RingOp o : {RingOp::reduce_scatter, RingOp::all_gather, RingOp::all_reduce})
      if (op == ring_op_name(o)) {
        LinkBytes b;
        b.intra = need_u64(t, "sent_intra", w);
        b.inter = need_u64(t, "sent_inter", w);
        m.by_op(o) += b;
      }
  }
  return m;
}

// Sums comm.totals entries of ring collectives on axis "tp" by purpose.
TpStepBytes measured_tp_ring(const Json& rank, const std::string& where) {
  const Json& totals = need(need(rank, "comm", where), "totals", where + ".comm");
  TpStepBytes m;
  for (const Json& t : totals) {
    const std::string w = where + ".comm.totals[]";
    if (need_string(t, "axis", w) != "tp" || need_string(t, "impl", w) != "ring") continue;
    const std::string op = need_string(t, "op", w);
    if (op != "reduce_scatter" && op != "all_gather" && op != "all_reduce") continue;
    const std::string purpose = t.contains("purpose") ? need_string(t, "purpose", w) : "";
    const u64 sent = need_u64(t, "sent_intra", w) + need_u64(t, "sent_inter", w);
    (purpose == "regather"           ? m.regather
     : purpose == "replicated_grads" ? m.replicated_grads
     : purpose == "vocab"            ? m.vocab
                                     : m.region) += sent;
  }
  return m;
}

u64 measured_pp_sent(const Json& rank, const std::string& where) {
  const Json& totals = need(need(rank, "comm", where), "totals", where + ".comm");
  u64 sent = 0;
  for (const Json& t : totals) {
    const std::string w = where + ".comm.totals[]";
    if (need_string(t, "axis", w) != "pp" || need_string(t, "op", w) != "send") continue;
    sent += need_u64(t, "sent_intra", w) + need_u64(t, "sent_inter", w);
  }
  return sent;
}

}  // namespace shardlab::plan
