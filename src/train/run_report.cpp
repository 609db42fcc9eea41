// ledger.json, trace.json and the summary (see run_report.h).
#include "train/run_report.h"

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "core/flops.h"
#include "io/owned_files.h"
#include "model/param_layout.h"
#include "report/format.h"
#include "report/pipeline_report.h"

namespace shardlab {

namespace {

// Collective: every rank's string, in rank order, on every rank — each padded to the longest, through the
// control plane's all-gather (all_gather_values: MPI's built-in, never the ring under test).
std::vector<std::string> gather_strings(const std::string& mine, Communicator& world) {
  const std::vector<uint64_t> lengths = world.all_gather_value<uint64_t>(mine.size());
  const size_t longest = *std::max_element(lengths.begin(), lengths.end());
  std::vector<char> padded(longest, '\0');
  std::copy(mine.begin(), mine.end(), padded.begin());
  const std::vector<char> all = world.all_gather_values(padded);
  std::vector<std::string> out;
  for (size_t r = 0; r < lengths.size(); ++r) out.emplace_back(all.data() + r * longest, lengths[r]);
  return out;
}

}  // namespace

nlohmann::json write_ledger_file(const std::string& path, const TrainConfig& cfg, size_t params,
                                 const RunLayout& layout, const MemoryLedger& memory, const CommLedger& comm,
                                 const CommLedger& eval_comm, const CommLedger& checkpoint_comm, Communicator& world,
                                 std::vector<SchedulePanel>* schedule) {
  const FlopCounter& f = flop_counter();  // FLOPs of this rank's GEMMs, by phase (core/flops.h)
  const nlohmann::json flops = {{"block_forward", f[Flop::block_forward]},
                                {"block_backward", f[Flop::block_backward]},
                                {"block_recompute", f[Flop::block_recompute]},
                                {"other", f[Flop::other]},
                                {"attention", f.attention}};  // part of the phases above
  nlohmann::json mine = {{"rank", world.rank()},
                         {"params", params},
                         {"memory", memory.to_json()},
                         {"flops", flops},
                         {"comm", comm.to_json()},
                         {"comm_eval", eval_comm.to_json(200)},
                         {"comm_checkpoint", checkpoint_comm.to_json(200)}};
  if (!layout.pipeline_rank.is_null()) mine["pipeline"] = layout.pipeline_rank;
  if (!layout.moe_rank.is_null()) mine["moe"] = layout.moe_rank;
  std::vector<std::string> all = gather_strings(mine.dump(), world);
  if (world.rank() != 0) return nullptr;
  nlohmann::json j;
  j["world_size"] = world.size();
  // What the activations were: plan --ledger checks every saved tensor against plan/activation_items.h.
  const bool f64 = cfg.recipe.f64();
  const nlohmann::json activations = {{"seq", cfg.model.seq},
                                      {"micro_batch", cfg.micro_batch},
                                      {"hidden", cfg.model.hidden},
                                      {"heads", cfg.model.heads},
                                      {"layers", cfg.model.layers},
                                      {"vocab", cfg.model.vocab},
                                      {"width", cfg.recipe.bf16() ? 2
                                                : f64             ? 8
                                                                  : 4},
                                      {"stat_width", f64 ? 8 : 4},
                                      {"attention", attention_name(cfg.attention)},
                                      {"recompute", recompute_name(cfg.recompute)},
                                      {"dropout", cfg.model.dropout},
                                      {"micro_batches", layout.accum * layout.steps},
                                      {"tp", cfg.layout.tp},
                                      {"sequence_parallel", cfg.layout.sequence_parallel},
                                      {"cp", cfg.layout.cp}};
  j["model"] = {{"params", params},
                {"dtype", dtype_name(cfg.recipe.dtype)},
                {"mixed", mixed_name(cfg.recipe.mixed)},
                {"optimizer", optimizer_name(cfg.recipe.optimizer)},
                {"grad_accum_dtype", grad_accum_name(cfg.recipe.grad_accum)},
                {"master", master_name(cfg.recipe.master)},
                {"momentum", cfg.recipe.momentum},
                {"activations", activations}};
  j["layout"] = {{"dp", layout.dp},
                 {"strategy", strategy_name(layout.strategy)},
                 {"shard_group", layout.shards.group},
                 {"ranks_per_node", layout.ranks_per_node},
                 {"padded_params", layout.shards.padded()},
                 {"shard", layout.shards.shard()},
                 {"accum", layout.accum},
                 {"steps", layout.steps},
                 {"comm", comm_impl_name(cfg.layout.comm)},
                 {"tp", cfg.layout.tp},
                 {"sequence_parallel", cfg.layout.sequence_parallel},
                 {"cp", cfg.layout.cp},
                 {"cp_split", word_of(kContextSplitWords, cfg.layout.cp_split)},
                 {"ep", cfg.layout.ep},
                 {"bucket_mb", cfg.layout.bucket_mb},
                 {"pp", cfg.layout.pp},
                 {"pp_layers", layer_counts_text(cfg.layout.pp_layers)},
                 {"schedule", schedule_name(cfg.layout.schedule)},
                 {"virtual_stages", cfg.layout.virtual_stages},
                 {"exact", cfg.layout.exact}};
  if (!layout.moe.is_null()) j["moe"] = layout.moe;
  j["ranks"] = nlohmann::json::array();
  for (const std::string& s : all) j["ranks"].push_back(nlohmann::json::parse(s));
  if (!layout.pipeline.is_null()) {
    j["pipeline"] = pipeline_section(layout.pipeline, j["ranks"], schedule);
    for (auto& r : j["ranks"]) r.erase("pipeline");  // the slots are in the picture; the section keeps the sums
  }
  write_owned_file(path, j.dump(1) + "\n");
  return j;
}

void write_trace_file(const std::string& path, const Trace& trace, Communicator& world) {
  std::vector<std::string> all = gather_strings(trace.to_json_events(world.rank()), world);
  if (world.rank() == 0) write_owned_file(path, trace_document(all) + "\n");
}

std::string params_text(const TrainConfig& cfg, size_t rank0_params) {
  const std::string whole = commas(ParamLayout(cfg.model).total()) + " params";
  const bool tp = cfg.layout.tp > 1, pp = cfg.layout.pp > 1, ep = cfg.layout.ep > 1;
  if (!tp && !pp && !ep) return whole;
  std::string part = tp && pp ? "tp slice of its pp stage" : tp ? "tp slice" : pp ? "pp stage" : "";
  if (ep) part += part.empty() ? "share of the experts" : ", its share of the experts";
  return whole + " (" + commas(rank0_params) + " on rank 0: its " + part + ")";
}

void print_summary(const TrainConfig& cfg, size_t params, const RunLayout& layout, const MemoryLedger& memory,
                   const CommLedger& comm, const Progress& progress, double last_loss, std::optional<double> last_val,
                   const nlohmann::json& ledger) {
  std::printf("\n%s; %d layers, hidden %d, %d heads, seq %d, %s, %s", params_text(cfg, params).c_str(),
              cfg.model.layers, cfg.model.hidden, cfg.model.heads, cfg.model.seq, dtype_name(cfg.recipe.dtype),
              cfg.recipe.bf16() ? "mixed bf16" : "no mixed precision");
  if (layout.dp > 1) std::printf(", %s on %d data-parallel ranks", strategy_name(layout.strategy), layout.dp);
  if (cfg.layout.tp > 1)
    std::printf(", tensor parallel over %d ranks%s", cfg.layout.tp,
                cfg.layout.sequence_parallel ? " with sequence parallelism" : "");
  if (cfg.layout.cp > 1) std::printf(", context parallel over %d", cfg.layout.cp);
  if (cfg.model.moe.on())
    std::printf(", %d experts top-%d%s", cfg.model.moe.experts, cfg.model.moe.top_k,
                cfg.layout.ep > 1 ? (", expert parallel over " + std::to_string(cfg.layout.ep)).c_str() : "");
  if (cfg.layout.pp > 1) std::printf(", %d pipeline stages", cfg.layout.pp);
  std::printf("\nfinal loss %.4f", last_loss);
  if (last_val) std::printf("   val loss %.4f", *last_val);
  std::printf("   %.0f tokens/s over %s\n", progress.tokens_per_second(),
              format_duration(progress.elapsed_seconds()).c_str());
  std::printf("memory (rank 0)      current        peak   bytes/param\n");
  for (int i = 0; i < kMemCategories; ++i) {
    Mem c = static_cast<Mem>(i);
    if (memory.peak(c) == 0) continue;
    std::printf("  %-12s %12s %12s", mem_name(c), format_bytes(memory.current(c)).c_str(),
                format_bytes(memory.peak(c)).c_str());
    if (i <= static_cast<int>(Mem::momentum)) std::printf("   %6.2f", double(memory.current(c)) / params);
    std::printf("\n");
  }
  std::printf("  %-12s %12s %12s   %6.2f\n", "model states", format_bytes(memory.model_state_bytes()).c_str(), "",
              double(memory.model_state_bytes()) / params);
  const Axis dp = Axis::dp;
  CommCall sent;  // the rings of the steps: not the loss / grad-norm scalars ("gather")
  for (const char* op : {"reduce_scatter", "all_gather", "all_reduce"}) {
    CommCall c = comm.total(op, &dp);
    sent.sent_intra += c.sent_intra;
    sent.sent_inter += c.sent_inter;
  }
  if (ledger.is_object() && ledger.contains("pipeline")) {
    const nlohmann::json& p = ledger["pipeline"];
    std::printf(
        "pipeline: %s on %d stages, %d micro-batch%s per step: bubble %.1f%% measured (step %d), %.1f%% in the "
        "schedule, %.1f%% by the formula; picture: %s/schedule.svg\n",
        p["schedule"].get<std::string>().c_str(), p["stages"].get<int>(), p["micro_batches"].get<int>(),
        p["micro_batches"].get<int>() == 1 ? "" : "es", 100 * p["bubble_measured"].get<double>(),
        p["measured_step"].get<int>(), 100 * p["bubble_schedule"].get<double>(),
        100 * p["bubble_formula"].get<double>(), cfg.outputs.out.c_str());
    if (const std::string note = cpu_sharing_note(p); !note.empty()) std::printf("  (measured: %s)\n", note.c_str());
  }
  if (layout.dp > 1 && layout.steps > 0)
    std::printf("communication (rank 0, dp axis): %s sent per step (%s intra-node, %s inter-node)\n",
                format_bytes(double(sent.sent()) / layout.steps).c_str(),
                format_bytes(double(sent.sent_intra) / layout.steps).c_str(),
                format_bytes(double(sent.sent_inter) / layout.steps).c_str());
}

}  // namespace shardlab
