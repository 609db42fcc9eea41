// report/search_report.cpp — the ranked table of `plan --search` and its JSON (see search_report.h).
#include "report/search_report.h"

#include <algorithm>
#include <ostream>

#include <nlohmann/json.hpp>

#include "report/format.h"

namespace shardlab::plan {

namespace {
using u64 = std::uint64_t;

// The table's units: GB and ms at the chapter's scale, MB and µs for a model small enough to train here.
struct Units {
  double bytes = 1e9, seconds = 1e-3;
  std::string mem = "GB", time = "ms";
  std::string m(double b) const { return fixed(b / bytes, 2); }
  std::string t(double s) const { return fixed(s / seconds, 1); }
};
Units units_for(const SearchRequest& q, const SearchResult& r) {
  Units u;
  if (q.gpu_memory_gb < 1) u.bytes = 1e6, u.mem = "MB";
  if (!r.rows.empty() && r.rows.front().time.step() < 10e-3) u.seconds = 1e-6, u.time = "µs";
  return u;
}
std::string experts_text(const SearchModel& m) {
  if (!m.experts) return "";
  const ExpertDims e = m.moe();
  return " experts: E=" + std::to_string(e.experts) + " top-" + std::to_string(e.top_k) +
         " F=" + std::to_string(e.width(m.hidden)) + " in blocks l % " + std::to_string(e.every) + " = 0 (C25)";
}
double tokens_per_s(const SearchRequest& q, const SearchRow& r) {
  return double(q.space.global_batch) * double(q.model.seq) / r.time.step();
}

std::vector<std::string> row_cells(const SearchRequest& q, const Units& u, const SearchRow& r,
                                   const std::string& rank) {
  const SearchLayout& l = r.layout;
  const StepTime& t = r.time;
  return {rank,
          std::to_string(l.dp),
          std::to_string(l.tp),
          l.sequence_parallel ? "SP" : "-",
          std::to_string(l.pp),
          std::to_string(l.cp),
          std::to_string(l.ep),
          std::to_string(l.zero),
          std::to_string(l.micro_batch) + "x" + std::to_string(l.micro_batches),
          word_of(kRecomputeWords, l.recompute),
          word_of(kAttentionWords, l.attention),
          u.m(double(r.memory.model_states)),
          u.m(double(r.memory.activations)),
          u.m(double(r.memory.total())),
          u.t(t.compute),
          u.t(t.update),
          u.t(t.dp),
          u.t(t.tp),
          u.t(t.pp),
          u.t(t.cp),
          u.t(t.ep),
          u.t(t.bubble),
          u.t(t.step()),
          fixed(tokens_per_s(q, r), 0)};
}

std::string marked(const SearchRequest& q, const std::string& flag, const std::string& text) {
  return text + (q.is_default(flag) ? " (default)" : "");
}

nlohmann::json row_json(const SearchRequest& q, const SearchRow& r, u64 rank) {
  const SearchLayout& l = r.layout;
  const StepTime& t = r.time;
  auto link = [](bool inter) { return inter ? "inter" : "intra"; };
  return {{"rank", rank},
          {"dp", l.dp},
          {"tp", l.tp},
          {"sequence_parallel", l.sequence_parallel},
          {"pp", l.pp},
          {"cp", l.cp},
          {"ep", l.ep},
          {"zero", l.zero},
          {"micro_batch", l.micro_batch},
          {"micro_batches", l.micro_batches},
          {"recompute", word_of(kRecomputeWords, l.recompute)},
          {"attention", word_of(kAttentionWords, l.attention)},
          {"memory_bytes",
           {{"model_states", r.memory.model_states},
            {"activations", r.memory.activations},
            {"activation_per_layer", r.memory.activation_per_layer},
            {"in_flight", r.memory.in_flight},
            {"psi_slice", r.memory.psi_slice},
            {"psi_experts", r.memory.psi_experts},
            {"total", r.memory.total()}}},
          {"seconds",
           {{"compute", t.compute},
            {"update", t.update},
            {"dp", t.dp},
            {"dp_before_overlap", t.dp_total},
            {"tp", t.tp},
            {"pp", t.pp},
            {"cp", t.cp},
            {"ep", t.ep},
            {"bubble", t.bubble},
            {"step", t.step()}}},
          {"flops_per_gpu", t.flops},
          {"bytes_sent_per_gpu",
           {{"dp", t.dp_bytes}, {"tp", t.tp_bytes}, {"pp", t.pp_bytes}, {"cp", t.cp_bytes}, {"ep", t.ep_bytes}}},
          {"links",
           {{"dp", link(t.dp_inter)},
            {"tp", link(t.tp_inter)},
            {"pp", link(t.pp_inter)},
            {"cp", link(t.cp_inter)},
            {"ep", link(t.ep_inter)}}},
          {"tokens_per_s", tokens_per_s(q, r)}};
}
}  // namespace

bool SearchRequest::is_default(const std::string& flag) const {
  return std::find(defaults.begin(), defaults.end(), flag) != defaults.end();
}

std::string why_best_differs(const SearchRow& best, const SearchRow& rule) {
  if (best.layout == rule.layout) return "the rule of thumb is the fastest layout that fits";
  const StepTime &b = best.time, &r = rule.time;
  const std::pair<const char*, double> saved[] = {
      {"compute", r.compute - b.compute}, {"the optimizer update", r.update - b.update},
      {"dp communication", r.dp - b.dp},  {"tp communication", r.tp - b.tp},
      {"pp communication", r.pp - b.pp},  {"cp communication", r.cp - b.cp},
      {"ep communication", r.ep - b.ep},  {"the bubble", r.bubble - b.bubble}};
  const auto* most = std::max_element(std::begin(saved), std::end(saved),
                                      [](const auto& x, const auto& y) { return x.second < y.second; });
  const auto* paid = std::min_element(std::begin(saved), std::end(saved),
                                      [](const auto& x, const auto& y) { return x.second < y.second; });
  std::string line = "the best is " + fixed(100 * (r.step() - b.step()) / r.step(), 1) + "% faster: it saves " +
                     seconds_text(most->second) + " of " + most->first;
  if (paid->second < 0) line += " and pays " + seconds_text(-paid->second) + " more " + paid->first;
  return line + ", using " + format_bytes(double(best.memory.total())) + " per GPU instead of " +
         format_bytes(double(rule.memory.total())) + " (C29: the cost moved, it did not vanish)";
}

void print_search(std::ostream& out, const SearchRequest& q, const SearchResult& r) {
  const SearchModel& m = q.model;
  const StepRates& k = q.rates;
  out << "shardlab plan --search: every layout of " << q.space.gpus << " GPUs of " << shortest(q.gpu_memory_gb)
      << " GB, ranked by modelled step time (1 GB = 1e9 bytes)\n"
      << "model:  "
      << (m.preset ? "preset " + m.name + ", Ψ = " + commas(m.psi) + " (the chapter's round number)"
          : m.name == "mixtral"
              ? "Mixtral-8x7B-like (`plan --preset 7b --ep e`'s) in the trainer's GPT, Ψ = " + commas(m.psi)
              : "the trainer's GPT, Ψ = " + commas(m.psi))
      << "; h=" << m.hidden << " L=" << m.layers << " a=" << m.heads << " s=" << m.seq
      << (m.preset ? std::string() : " V=" + std::to_string(m.vocab)) << experts_text(m) << "\n"
      << "recipe: AdamW, mixed bf16, fp32 master: 16 B/param of model states (C1); bf16 activations and messages\n"
      << "batch:  " << marked(q, "--global-batch", "B = " + std::to_string(q.space.global_batch) + " sequences")
      << " × " << marked(q, "--seq", "s = " + std::to_string(m.seq)) << " = " << commas(q.space.global_batch * m.seq)
      << " tokens per step\n"
      << "rates:  " << marked(q, "--gpu-tflops", shortest(k.gpu_flops / 1e12) + " TFLOPS per GPU") << ", "
      << marked(q, "--intra-gbps", shortest(k.intra_bytes_per_s / 1e9) + " GB/s intra-node") << ", "
      << marked(q, "--inter-gbps", shortest(k.inter_bytes_per_s / 1e9) + " GB/s inter-node") << ", "
      << marked(q, "--latency-us", "α = " + shortest(k.latency_s * 1e6) + " µs per message") << ", "
      << marked(q, "--ranks-per-node", "K = " + std::to_string(k.ranks_per_node) + " GPUs per node") << ", DP bucket "
      << shortest(k.bucket_bytes / 1e6) << " MB, update " << shortest(k.update_s_per_param * 1e12)
      << " ps per parameter\n"
      << (q.rates_file.empty() ? "        (defaults: 312 TFLOPS = A100 bf16 dense peak, our choice; 300 / 25 GB/s and "
                                 "8-GPU nodes the chapter's; α our choice; the update AdamW's 30 B per parameter\n"
                                 "        at an A100's 2 TB/s HBM)\n"
                               : "        (measured on this machine by plan --calibrate: " + q.rates_file + ")\n")
      << "placement: tp innermost, then cp, ep, dp, pp outermost; a group inside one node uses the intra-node link\n"
      << "overlap: dp gradients hide behind backward, parameter all-gathers behind forward, except the last bucket;\n"
      << "         tp (SP: all-gathers, reduce-scatters and backward's re-gathers, 1.25× the bytes), cp"
      << (m.experts
              ? ", ep (4 all-to-alls + the counts per MoE layer and micro-batch, + 3 with full recompute; even load)"
              : "")
      << " exposed; pp only while 1F1B fills and drains; bubble = (p−1)/m × compute (C20);\n"
      << "         the update (its slice under DP, its shard under ZeRO) after the last gradient: exposed\n"
      << (m.experts ? "         dp: dense gradients over dp·ep, the experts' over dp (ZeRO: shards over dp, then the "
                      "dense shard all-reduced over ep)\n"
                    : "")
      << "memory: model states over dp·cp by ZeRO stage + the chapter's activations (with SP 34·s·b·h/t per layer)\n"
      << "        × micro-batches in flight\n"
      << (m.experts ? "        experts: a rank holds the dense part and E/ep experts of each MoE block, sharded by "
                      "ZeRO over dp "
                      "(the ranks with the same\n        experts); a MoE block keeps the router's and the experts' "
                      "rows at an even load (s·b·k) in place of the MLP's\n"
                    : "");
  out << "layouts: " << commas(r.counts.enumerated) << " enumerated, " << commas(r.counts.divisibility)
      << " refused by divisibility (the trainer's rules), " << commas(r.over_memory) << " over "
      << shortest(q.gpu_memory_gb) << " GB, " << commas(r.rows.size()) << " fit";
  const Units u = units_for(q, r);
  const std::vector<std::string> header = {
      "rank",         "dp",           "tp",      "sp",        "pp",   "cp",
      "ep",           "zero",         "b x m",   "recompute", "attn", "states " + u.mem,
      "act " + u.mem, "mem " + u.mem, "compute", "update",    "dp",   "tp",
      "pp",           "cp",           "ep",      "bubble",    "step", "tokens/s"};
  out << "\nrank by step time (" << u.time << " per optimizer step; dp … ep: exposed communication of that axis)\n";
  Table t(header, 0);
  const size_t shown = std::min<size_t>(q.top, r.rows.size());
  for (size_t i = 0; i < shown; ++i) t.row(row_cells(q, u, r.rows[i], std::to_string(i + 1)));
  t.print(out);
  if (!r.rule) {
    out << "rule of thumb: no tp × pp × dp split of these GPUs divides the model and the batch\n";
    return;
  }
  const SearchRow& rule = *r.rule;
  out << "rule of thumb (TP inside a node, PP across nodes until it fits, DP outermost, ZeRO-1; C26): "
      << rule.layout.to_string() << "\n";
  if (!r.rule_rank) {
    out << "  it needs " << fixed(double(rule.memory.total()) / 1e9, 3) << " GB per GPU: over "
        << shortest(q.gpu_memory_gb) << " GB at every pp, so it is not in the ranking\n";
    return;
  }
  Table rt(header, 0);
  rt.row(row_cells(q, u, rule, std::to_string(r.rule_rank)));
  rt.print(out);
  out << "rule of thumb rank: " << r.rule_rank << " of " << r.rows.size() << "\n"
      << "why: " << why_best_differs(r.rows.front(), rule) << "\n";
}

nlohmann::json search_json(const SearchRequest& q, const SearchResult& r) {
  const SearchModel& m = q.model;
  nlohmann::json rows = nlohmann::json::array();
  for (size_t i = 0; i < r.rows.size(); ++i) rows.push_back(row_json(q, r.rows[i], i + 1));
  nlohmann::json j = {{"model",
                       {{"name", m.name},
                        {"psi", m.psi},
                        {"hidden", m.hidden},
                        {"layers", m.layers},
                        {"heads", m.heads},
                        {"seq", m.seq},
                        {"vocab", m.vocab},
                        {"experts", m.experts},
                        {"top_k", m.experts ? m.top_k : 0},
                        {"moe_every", m.experts ? m.every : 0},
                        {"expert_ffn", m.experts ? m.moe().width(m.hidden) : 0}}},
                      {"gpus", q.space.gpus},
                      {"global_batch", q.space.global_batch},
                      {"gpu_memory_bytes", q.gpu_memory_gb * 1e9},
                      {"rates",
                       {{"gpu_flops", q.rates.gpu_flops},
                        {"gpu_flops_flash", q.rates.flops_for(AttentionKernel::flash)},
                        {"intra_bytes_per_s", q.rates.intra_bytes_per_s},
                        {"inter_bytes_per_s", q.rates.inter_bytes_per_s},
                        {"latency_s", q.rates.latency_s},
                        {"ranks_per_node", q.rates.ranks_per_node},
                        {"bucket_bytes", q.rates.bucket_bytes},
                        {"update_s_per_param", q.rates.update_s_per_param},
                        {"from", q.rates_file.empty() ? "defaults and flags" : q.rates_file}}},
                      {"counts",
                       {{"enumerated", r.counts.enumerated},
                        {"refused_by_divisibility", r.counts.divisibility},
                        {"over_memory", r.over_memory},
                        {"fit", r.rows.size()}}},
                      {"rows", rows}};
  if (r.rule) {
    j["rule_of_thumb"] = row_json(q, *r.rule, r.rule_rank);
    j["rule_of_thumb"]["fits"] = r.rule_rank > 0;
  }
  return j;
}

}  // namespace shardlab::plan
