// `shardlab plan --search`: every layout of a step on --gpus N GPUs of --gpu-mem G GB (dp × tp × pp × cp × ep, SP, ZeRO
// stage, micro-batch size and count, recompute, attention kernel) for a preset or the trainer's GPT dims (with experts:
// --moe-*, cli/moe_flags.h, or the Mixtral-like preset), ranked by the modelled step time (plan/search_ranking.h),
// with the chapter's rule of thumb beside it (report/search_report.h); --json FILE writes the whole ranking. Exit 0
// with a ranking, 1 when no layout fits the memory, 2 on bad input (including a GPU count that no layout can split the
// model and the batch over).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <ostream>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/moe_flags.h"
#include "io/owned_files.h"
#include "plan/rates_file.h"
#include "report/ep_report.h"
#include "report/plan_report.h"
#include "report/search_report.h"

namespace shardlab::plan {

namespace {
using u64 = std::uint64_t;

constexpr const char* kSearchJsonBy = "plan --search --json";

struct SearchFail {
  std::string message;
};

struct SearchFlags {
  bool search = false;
  std::string preset, json, rates;
  u64 gpus = 0, layers = 4, hidden = 128, heads = 4, seq = 64, vocab = 256, global_batch = 1024, ranks_per_node = 8,
      top = 15;
  double gpu_mem = 80, gpu_tflops = 312, intra_gbps = 300, inter_gbps = 25, latency_us = 10;
  MoeFlags moe;
};

void define(Flags& f, SearchFlags& v) {
  f.flag("--search", v.search, "rank every layout of --gpus N GPUs of --gpu-mem G GB by modelled step time");
  f.add("--gpus", v.gpus, "GPUs N = dp·tp·pp·cp·ep");
  f.add("--gpu-mem", v.gpu_mem, "memory per GPU in GB (1 GB = 1e9 bytes)");
  f.group("Model (the trainer's GPT by default)");
  f.choice("--preset", v.preset, {"7b", "70b", "mixtral"},
           "the chapter's examples, or mixtral: the 7B-class MoE of `plan --preset 7b --ep e` (fixes the model; --seq "
           "may be added)");
  f.add("--layers", v.layers, "transformer blocks L");
  f.add("--hidden", v.hidden, "hidden size C");
  f.add("--heads", v.heads, "attention heads a");
  f.add("--seq", v.seq, "sequence length s (a preset's: 2048)");
  f.add("--vocab", v.vocab, "vocabulary size V");
  f.add("--global-batch", v.global_batch, "sequences per optimizer step B = dp·ep·b·m");
  f.group("Mixture of experts (claim C25; the ep axis is searched)");
  define_moe_flags(f, v.moe);
  f.group("Machine (a calibration's rates)");
  f.add("--gpu-tflops", v.gpu_tflops, "FLOP rate per GPU, in TFLOPS");
  f.add("--intra-gbps", v.intra_gbps, "intra-node link speed in GB/s");
  f.add("--inter-gbps", v.inter_gbps, "inter-node link speed in GB/s");
  f.add("--ranks-per-node", v.ranks_per_node, "GPUs per node K");
  f.add("--latency-us", v.latency_us, "latency α per message, in µs");
  f.add("--rates", v.rates, "FILE: this machine's rates from `plan --calibrate` (in place of the four above)", "FILE");
  f.group("Output");
  f.add("--top", v.top, "rows of the table");
  f.add("--json", v.json, "FILE: the whole ranking as JSON", "FILE");
}

SearchRequest search_request(const Flags& f, const SearchFlags& v) {
  SearchRequest q;
  if (!f.given("--gpus")) throw SearchFail{"--search needs --gpus N"};
  if (v.gpus < 1 || v.gpus > 65536) throw SearchFail{"--gpus expects an integer in [1, 65536]"};
  if (!(v.gpu_mem > 0 && v.gpu_mem <= 1e9)) {
    char got[32];
    std::snprintf(got, sizeof got, "%g", v.gpu_mem);
    throw SearchFail{std::string("--gpu-mem expects a number of GB above 0 and at most 1e9, got ") + got};
  }
  SearchModel& m = q.model;
  if (f.given("--preset")) {
    for (const char* n : {"--layers", "--hidden", "--heads", "--vocab"})
      if (f.given(n)) throw SearchFail{std::string("--preset fixes the model; drop ") + n};
    Preset p;
    find_preset(v.preset == "mixtral" ? "7b" : v.preset, &p);
    m = SearchModel{p.name, p.psi, p.act.hidden, p.act.layers, p.act.heads, p.act.seq, 0, 0, true};
    if (v.preset == "mixtral") {  // the trainer's GPT of Mixtral-8x7B's dims: Ψ counted, 32 heads as the 7B's
      const GptDims d = mixtral_like(p.act.seq);
      m = SearchModel{"mixtral", 0, d.hidden, d.layers, p.act.heads, p.act.seq, d.vocab, d.moe.experts, false};
      m.top_k = d.moe.top_k, m.every = d.moe.every, m.ffn = d.moe.ffn;
    }
  } else {
    m = SearchModel{"gpt", 0, v.hidden, v.layers, v.heads, v.seq, v.vocab, 0, false};
  }
  if (f.given("--seq") || !f.given("--preset")) m.seq = v.seq;
  for (const auto& [name, value] :
       {std::pair{"--layers", m.layers}, std::pair{"--hidden", m.hidden}, std::pair{"--heads", m.heads},
        std::pair{"--seq", m.seq}, std::pair{"--vocab", m.preset ? u64(1) : m.vocab}})
    if (value < 1 || value > (u64(1) << 24))
      throw SearchFail{std::string(name) + " expects an integer in [1, 16777216]"};
  if (m.hidden % m.heads != 0)
    throw SearchFail{"--heads " + std::to_string(m.heads) + " does not divide --hidden " + std::to_string(m.hidden)};
  if (std::string why =
          moe_flags_problem(f, v.moe, f.given("--preset"), "--preset mixtral: a Mixtral-8x7B-like MoE", m.layers);
      !why.empty())
    throw SearchFail{why};
  if (f.given("--moe-experts")) {
    const ExpertDims e = moe_dims(f, v.moe);
    m.experts = e.experts, m.top_k = e.top_k, m.every = e.every, m.ffn = e.ffn;
  }
  if (v.global_batch < 1 || v.global_batch > 10000000)
    throw SearchFail{"--global-batch expects an integer in [1, 1e7]"};
  // Keep every byte count exact in 64 bits (as plan does): the activations of the whole batch (the experts' rows at
  // k slots per token too), 32 bytes per parameter (every expert's) — bounded before Ψ is counted in 64 bits.
  const long double s = m.seq, h = m.hidden, F = m.ffn ? m.ffn : 4.0L * m.hidden, B = v.global_batch;
  const long double act = m.layers * (34.0L * s * B * h + 5.0L * m.heads * s * s * B +
                                      (m.experts ? 4.0L * s * B * m.top_k * (h + F) + 4.0L * s * B * m.experts : 0));
  const long double psi_bound = (m.preset ? (long double)m.psi : 0.0L) + m.layers * (12.0L * h * h + 13.0L * h) +
                                (m.seq + m.vocab) * h + m.experts * m.layers * (2.0L * h * F + F + 2.0L * h);
  if (act > 1e18L || 32.0L * psi_bound > 1e18L) throw SearchFail{"sizes too large for exact 64-bit byte counts"};
  if (!m.preset) m.psi = gpt_param_count(m.gpt());
  for (const std::string& why : {rate_problem("--gpu-tflops", v.gpu_tflops, kFlopRate, 1e12, "TFLOPS"),
                                 rate_problem("--intra-gbps", v.intra_gbps, kLinkRate, 1e9, "GB/s"),
                                 rate_problem("--inter-gbps", v.inter_gbps, kLinkRate, 1e9, "GB/s"),
                                 rate_problem("--latency-us", v.latency_us, kLatency, 1e-6, "µs")})
    if (!why.empty()) throw SearchFail{why};
  if (v.ranks_per_node < 1 || v.ranks_per_node > 65536)
    throw SearchFail{"--ranks-per-node expects an integer in [1, 65536]"};
  if (v.gpus > v.ranks_per_node && v.gpus % v.ranks_per_node != 0)
    throw SearchFail{"--gpus " + std::to_string(v.gpus) + " is not a whole number of nodes of --ranks-per-node " +
                     std::to_string(v.ranks_per_node)};
  if (v.top < 1 || v.top > 1000000) throw SearchFail{"--top expects an integer in [1, 1000000]"};
  q.space = SearchSpace{v.gpus, v.global_batch, v.ranks_per_node};
  q.rates.gpu_flops = v.gpu_tflops * 1e12;
  q.rates.intra_bytes_per_s = v.intra_gbps * 1e9;
  q.rates.inter_bytes_per_s = v.inter_gbps * 1e9;
  q.rates.latency_s = v.latency_us * 1e-6;
  q.rates.ranks_per_node = v.ranks_per_node;
  q.gpu_memory_gb = v.gpu_mem;
  q.top = v.top;
  const char* const rate_flags[] = {"--gpu-tflops", "--intra-gbps", "--inter-gbps", "--latency-us"};
  if (f.given("--rates")) {
    for (const char* n : rate_flags)
      if (f.given(n)) throw SearchFail{std::string("--rates gives the rates: drop ") + n};
    try {
      const StepRates measured = read_rates_file(v.rates);
      q.rates.gpu_flops = measured.gpu_flops, q.rates.latency_s = measured.latency_s;
      q.rates.intra_bytes_per_s = measured.intra_bytes_per_s, q.rates.inter_bytes_per_s = measured.inter_bytes_per_s;
      q.rates.update_s_per_param = measured.update_s_per_param, q.rates.gpu_flops_flash = measured.gpu_flops_flash;
      q.rates_file = v.rates;
    } catch (const std::invalid_argument& e) {
      throw SearchFail{e.what()};
    }
  }
  for (const char* n : {"--global-batch", "--seq", "--ranks-per-node"})
    if (!f.given(n)) q.defaults.push_back(n);
  for (const char* n : rate_flags)
    if (!f.given(n) && !f.given("--rates")) q.defaults.push_back(n);
  return q;
}

}  // namespace

int plan_search_run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  SearchFlags v;
  Flags flags(
      "shardlab plan --search",
      "Every layout of N GPUs (dp × tp × pp × cp × ep, sequence parallelism, ZeRO stage, micro-batches, recompute, "
      "attention kernel) that fits G GB, ranked by a step-time model: compute + optimizer update + exposed "
      "communication per axis + pipeline bubble, beside the chapter's rule of thumb.");
  define(flags, v);
  try {
    if (printed_help<SearchFail>(flags, args, out)) return 0;
    const SearchRequest q = search_request(flags, v);
    if (flags.given("--json"))
      if (std::string why = output_file_problem(v.json, "--json", kSearchJsonBy, {v.rates}); !why.empty())
        throw SearchFail{why};
    const SearchResult result = search_layouts(q.model, q.space, q.rates, q.gpu_memory_gb * 1e9);
    if (result.counts.layouts.empty())
      throw SearchFail{"no layout splits this model and a global batch of " + std::to_string(q.space.global_batch) +
                       " over " + std::to_string(q.space.gpus) + " GPUs (" + std::to_string(result.counts.enumerated) +
                       " tried: heads % tp, layers ≥ pp, s % 2cp, E % ep, B % (dp·ep·b))"};
    if (flags.given("--json")) write_owned_file(v.json, search_json(q, result).dump(1) + "\n", false, kSearchJsonBy);
    if (result.rows.empty()) {
      double least = 0;
      for (const SearchLayout& l : result.counts.layouts) {
        const double need = double(search_memory(q.model, l).total());
        least = least == 0 ? need : std::min(least, need);
      }
      err << "shardlab plan --search: no layout fits " << v.gpu_mem << " GB per GPU: the "
          << result.counts.layouts.size() << " layouts that divide need " << least / 1e9
          << " GB or more (add GPUs or memory)\n";
      return 1;
    }
    print_search(out, q, result);
    return 0;
  } catch (const SearchFail& f) {
    err << "shardlab plan --search: error: " << f.message << " (shardlab plan --search --help lists the flags)\n";
    return 2;
  } catch (const std::exception& e) {
    err << "shardlab plan --search: error: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace shardlab::plan
