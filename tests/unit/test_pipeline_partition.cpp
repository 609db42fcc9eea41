// How the layers split over pipeline stages, single process (parallel/pipeline_partition.h; claims C20–C22):
//  - pipeline_problem refuses pp > layers, interleaved with layers % (p·v) ≠ 0, --virtual-stages without
//    interleaved, interleaved without --virtual-stages, and bad --pp-layers lists (wrong count, wrong sum, 0,
//    text, empty items, with --virtual-stages) with one sentence naming the flag; partition_layers gives the
//    stated first_block / end_block / embedding / head per model chunk, balanced and from --pp-layers, and
//    held_units / ParamLayout(cfg, {}, held) give each stage exactly its units' tensors.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "model/param_layout.h"
#include "parallel/pipeline_partition.h"

using namespace shardlab;

namespace {
ScheduleKind schedule_kind(const char* word) {
  ScheduleKind k = ScheduleKind::one_f_one_b;
  REQUIRE(parse_schedule(word, &k));
  return k;
}
// What the command line says of --pp-layers TEXT with these flags: the list's own problem, or the split's.
std::string problem(int layers, int pp, int v, const char* schedule, const std::string& text) {
  std::vector<int> counts;
  if (std::string why = parse_layer_counts(text, &counts); !why.empty()) return "--pp-layers " + why;
  return pipeline_problem(layers, pp, v, schedule_kind(schedule), counts);
}
std::vector<int> counts_of(const std::string& text) {
  std::vector<int> counts;
  REQUIRE(parse_layer_counts(text, &counts).empty());
  return counts;
}
}  // namespace

TEST_CASE("pipeline_problem: impossible splits are refused with one sentence naming the flag",
          "[schedule][partition]") {
  struct Bad {
    int layers, pp, v;
    const char* schedule;
    const char* pp_layers;
    const char* names;  // a piece the message must contain
  };
  const std::vector<Bad> bad = {
      {4, 8, 1, "1f1b", "", "--pp 8"},                   // more stages than layers
      {4, 5, 1, "gpipe", "", "--pp 5"},                  //
      {6, 2, 2, "interleaved", "", "divisible"},         // 6 % (2·2) ≠ 0
      {12, 4, 2, "interleaved", "", "divisible"},        // 12 % 8 ≠ 0
      {8, 4, 3, "interleaved", "", "--pp 4"},            // 12 model chunks > 8 layers
      {8, 2, 2, "1f1b", "", "--virtual-stages 2"},       // virtual stages without interleaved
      {8, 2, 3, "gpipe", "", "--virtual-stages 3"},      //
      {8, 2, 1, "interleaved", "", "--virtual-stages"},  // interleaved without virtual stages
      {4, 2, 1, "1f1b", "1,1,2", "--pp-layers"},         // wrong count
      {4, 2, 1, "1f1b", "4", "--pp-layers"},             //
      {4, 2, 1, "1f1b", "1,1", "--pp-layers"},           // wrong sum
      {4, 2, 1, "1f1b", "2,3", "--pp-layers"},           //
      {4, 2, 1, "1f1b", "0,4", "--pp-layers"},           // a stage without layers
      {4, 2, 1, "1f1b", "a,b", "--pp-layers"},           // text
      {4, 2, 1, "1f1b", "1,x", "--pp-layers"},           //
      {4, 2, 1, "1f1b", "1.5,2.5", "--pp-layers"},       //
      {4, 2, 1, "1f1b", "1,,3", "--pp-layers"},          // an empty item
      {4, 2, 1, "1f1b", "1,3,", "--pp-layers"},          //
      {4, 2, 1, "1f1b", "-1,5", "--pp-layers"},          //
      {8, 2, 2, "interleaved", "4,4", "--pp-layers"},    // per-stage counts with virtual stages
      {4, 0, 1, "1f1b", "", "--pp"},                     //
      {4, 2, 0, "1f1b", "", "--virtual-stages"},         //
  };
  for (const Bad& b : bad) {
    INFO("layers " << b.layers << ", pp " << b.pp << ", v " << b.v << ", " << b.schedule << ", --pp-layers '"
                   << b.pp_layers << "'");
    const std::string why = problem(b.layers, b.pp, b.v, b.schedule, b.pp_layers);
    INFO("message: " << why);
    CHECK_FALSE(why.empty());
    CHECK(why.find(b.names) != std::string::npos);
    CHECK(why.find('\n') == std::string::npos);  // one sentence, one line
  }
  struct Good {
    int layers, pp, v;
    const char* schedule;
    const char* pp_layers;
  };
  for (const Good& g :
       {Good{4, 1, 1, "1f1b", ""}, Good{4, 4, 1, "gpipe", ""}, Good{5, 2, 1, "1f1b", ""}, Good{4, 2, 1, "1f1b", "1,3"},
        Good{8, 2, 1, "gpipe", "3,5"}, Good{8, 2, 2, "interleaved", ""}, Good{8, 4, 2, "interleaved", ""},
        Good{12, 2, 3, "interleaved", ""}, Good{4, 1, 1, "1f1b", "4"}}) {
    INFO("layers " << g.layers << ", pp " << g.pp << ", v " << g.v << ", " << g.schedule << ", --pp-layers '"
                   << g.pp_layers << "'");
    CHECK(problem(g.layers, g.pp, g.v, g.schedule, g.pp_layers).empty());
  }
}

namespace {
struct Spec {
  int first, end;
  bool embedding, head;
};
// The chunks partition_layers gives, by model chunk, against the stated ones; and stage_of/local_index.
void check_split(int layers, int pp, int v, const std::string& list, const std::vector<Spec>& want) {
  INFO("layers " << layers << ", pp " << pp << ", v " << v << ", --pp-layers '" << list << "'");
  const std::vector<int> counts = counts_of(list);
  REQUIRE(
      pipeline_problem(layers, pp, v, v > 1 ? ScheduleKind::interleaved : ScheduleKind::one_f_one_b, counts).empty());
  const PipelinePartition part = partition_layers(layers, pp, v, counts);
  CHECK(part.stages == pp);
  CHECK(part.virtual_stages == v);
  REQUIRE(part.chunks.size() == want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    INFO("model chunk " << k);
    CHECK(part.chunks[k].first_block == want[k].first);
    CHECK(part.chunks[k].end_block == want[k].end);
    CHECK(part.chunks[k].embedding == want[k].embedding);
    CHECK(part.chunks[k].head == want[k].head);
    CHECK(part.stage_of(int(k)) == int(k) % pp);
    CHECK(part.local_index(int(k)) == int(k) / pp);
    CHECK(&part.chunk(int(k) % pp, int(k) / pp) == &part.chunks[k]);
  }
}
}  // namespace

TEST_CASE("partition_layers: balanced and --pp-layers splits give the stated chunks", "[schedule][partition]") {
  check_split(4, 1, 1, "", {{0, 4, true, true}});
  check_split(8, 2, 1, "", {{0, 4, true, false}, {4, 8, false, true}});
  check_split(7, 3, 1, "", {{0, 3, true, false}, {3, 5, false, false}, {5, 7, false, true}});  // first L mod p: +1
  check_split(5, 4, 1, "", {{0, 2, true, false}, {2, 3, false, false}, {3, 4, false, false}, {4, 5, false, true}});
  check_split(4, 4, 1, "", {{0, 1, true, false}, {1, 2, false, false}, {2, 3, false, false}, {3, 4, false, true}});
  check_split(4, 2, 1, "1,3", {{0, 1, true, false}, {1, 4, false, true}});
  check_split(8, 2, 1, "3,5", {{0, 3, true, false}, {3, 8, false, true}});
  check_split(8, 3, 1, "1,6,1", {{0, 1, true, false}, {1, 7, false, false}, {7, 8, false, true}});
  // Interleaved: model chunk k = c·p + stage, in layer order.
  check_split(8, 2, 2, "", {{0, 2, true, false}, {2, 4, false, false}, {4, 6, false, false}, {6, 8, false, true}});
  check_split(12, 2, 3, "",
              {{0, 2, true, false},
               {2, 4, false, false},
               {4, 6, false, false},
               {6, 8, false, false},
               {8, 10, false, false},
               {10, 12, false, true}});
}

TEST_CASE("held_units and the stage layouts: each stage holds exactly its chunks' units", "[schedule][partition]") {
  GPTConfig cfg;
  cfg.layers = 8;
  cfg.hidden = 16;
  cfg.heads = 2;
  cfg.seq = 8;
  cfg.vocab = 32;
  const ParamLayout whole(cfg);
  struct Split {
    int pp, v;
    const char* list;
    std::vector<std::vector<int>> units;  // per stage: its units (0 embedding, 1…8 blocks, 9 final LN + head)
  };
  for (const Split& sp :
       {Split{2, 1, "", {{0, 1, 2, 3, 4}, {5, 6, 7, 8, 9}}}, Split{2, 1, "3,5", {{0, 1, 2, 3}, {4, 5, 6, 7, 8, 9}}},
        Split{2, 2, "", {{0, 1, 2, 5, 6}, {3, 4, 7, 8, 9}}}, Split{4, 2, "", {{0, 1, 5}, {2, 6}, {3, 7}, {4, 8, 9}}},
        Split{1, 1, "", {{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}}}}) {
    INFO("pp " << sp.pp << ", v " << sp.v << ", --pp-layers '" << sp.list << "'");
    const PipelinePartition part = partition_layers(cfg.layers, sp.pp, sp.v, counts_of(sp.list));
    std::map<std::string, int> holders;  // tensor name → stages holding it
    size_t elements = 0;
    for (int s = 0; s < sp.pp; ++s) {
      INFO("stage " << s);
      const std::vector<bool> held = part.held_units(s);
      REQUIRE(held.size() == size_t(cfg.layers + 2));
      std::vector<int> got;
      for (int u = 0; u < int(held.size()); ++u)
        if (held[u]) got.push_back(u);
      CHECK(got == sp.units[s]);
      const ParamLayout local(cfg, {}, held);
      REQUIRE(local.units() == whole.units());
      for (int u = 0; u < local.units(); ++u) {
        CHECK(local.holds(u) == bool(held[u]));
        if (held[u]) CHECK(local.unit_end(u) - local.unit_begin(u) == whole.unit_end(u) - whole.unit_begin(u));
      }
      for (const TensorSpec& t : local.tensors()) {
        ++holders[t.name];
        CHECK(t.numel == whole.find(t.name).numel);
      }
      elements += local.total();
    }
    CHECK(elements == whole.total());  // the stages' layouts tile the model
    CHECK(holders.size() == whole.tensors().size());
    for (const auto& [name, n] : holders) {
      INFO(name);
      CHECK(n == 1);
    }
  }
}
