// Whole-tensor checkpoints from any layout (see whole_checkpoint.h).
#include "io/whole_checkpoint.h"

#include <cstring>
#include <memory>
#include <vector>

#include "parallel/pipeline_partition.h"

namespace shardlab {

namespace {

template <class T>
using Kept = std::vector<std::unique_ptr<FlatStore<T>>>;

// A sharded store gathered into a whole temporary copy inside its shard group; a whole store as it is.
template <class T>
NamedStores<T> gather_shards(DataParallel<T>& engine, MemoryLedger& ledger, Kept<T>& keep) {
  const ShardLayout& shards = engine.shards();
  NamedStores<T> stores;
  for (auto& [kind, store] : checkpoint_stores(engine.states())) {
    if (store->begin() == 0 && store->size() == shards.padded()) {
      stores.push_back({kind, store});
      continue;
    }
    keep.push_back(std::make_unique<FlatStore<T>>(ledger, Mem::workspace, store->is_bf16(), 0, shards.padded()));
    FlatStore<T>& w = *keep.back();
    std::memcpy(w.raw(store->begin()), store->raw(store->begin()), store->size() * store->elem_bytes());
    const std::vector<size_t> counts = shards.counts(0, shards.padded());
    if (w.is_bf16())
      engine.shard_group().all_gather(w.h(0), counts);
    else
      engine.shard_group().all_gather(w.t(0), counts);
    stores.push_back({kind, &w});
  }
  return stores;
}

// The ranks with dp and cp coordinates 0 hold one copy of every (stage, tp slice) (cp ranks hold the same
// parameters, like dp ranks; comm/grid_coords.h). Each sends its whole stores to world rank 0, which places them
// in the whole model's.
std::vector<int> slice_holders(ProcessGrid& grid) {
  const GridSizes sizes{grid.size(Axis::dp), grid.size(Axis::tp), grid.size(Axis::pp), grid.size(Axis::cp),
                        grid.size(Axis::ep)};
  std::vector<int> holders;
  for (int p = 0; p < sizes.pp; ++p)
    for (int e = 0; e < sizes.ep; ++e)
      for (int t = 0; t < sizes.tp; ++t) holders.push_back(rank_of_coords(sizes, GridCoords{0, p, 0, e, t}));
  return holders;
}

template <class T>
void assemble_whole(DataParallel<T>& engine, const GPTConfig& model, const ParallelLayout& pl, MemoryLedger& ledger,
                    NamedStores<T>& stores, Kept<T>& keep) {
  ProcessGrid& grid = engine.grid();
  const int pp = grid.size(Axis::pp), me = grid.world_rank();
  const std::vector<int> holders = slice_holders(grid);
  const ParamLayout& mine = engine.layout();
  Communicator& world = grid.world();
  if (me != 0) {
    for (size_t i = 0; i < stores.size(); ++i) {
      const FlatStore<T>& s = *stores[i].second;
      if (s.is_bf16())
        world.send(s.h(0), mine.total(), 0, int(i));
      else
        world.send(s.t(0), mine.total(), 0, int(i));
    }
    return;
  }
  const PipelinePartition part = partition_layers(model.layers, pp, pl.virtual_stages, pl.pp_layers);
  auto layout_of = [&](int w) {
    const GridCoords c = grid.coords_of(w);
    return ParamLayout(model, pl.slice(c.tp, 0, c.ep), part.held_units(c.pp));
  };
  const ParamLayout whole(model);
  for (size_t i = 0; i < stores.size(); ++i) {
    FlatStore<T>*& store = stores[i].second;
    const size_t eb = store->elem_bytes();
    keep.push_back(std::make_unique<FlatStore<T>>(ledger, Mem::workspace, store->is_bf16(), 0, whole.total()));
    FlatStore<T>& out = *keep.back();
    place_slices(mine, static_cast<const unsigned char*>(store->raw(0)), whole, static_cast<unsigned char*>(out.raw(0)),
                 eb);
    for (int w : holders) {
      if (w == 0) continue;
      const ParamLayout theirs = layout_of(w);
      FlatStore<T> got(ledger, Mem::workspace, store->is_bf16(), 0, theirs.total());
      if (got.is_bf16())
        world.recv(got.h(0), theirs.total(), w, int(i));
      else
        world.recv(got.t(0), theirs.total(), w, int(i));
      place_slices(theirs, static_cast<const unsigned char*>(got.raw(0)), whole,
                   static_cast<unsigned char*>(out.raw(0)), eb);
    }
    store = &out;
  }
}

}  // namespace

template <class T>
void save_whole_checkpoint(DataParallel<T>& engine, const GPTConfig& model, const ParallelLayout& layout,
                           const RunRecord& record, const std::string& dir, int64_t step) {
  ProcessGrid& grid = engine.grid();
  MemoryLedger& ledger = engine.ledger();
  Kept<T> keep;
  NamedStores<T> stores = gather_shards(engine, ledger, keep);
  if (grid.size(Axis::tp) > 1 || grid.size(Axis::pp) > 1 ||
      grid.size(Axis::ep) > 1) {  // every stage's, tp rank's and ep rank's slices, whole on rank 0
    if (grid.coord(Axis::dp) == 0 && grid.coord(Axis::cp) == 0)
      assemble_whole(engine, model, layout, ledger, stores, keep);
    if (grid.world_rank() == 0) save_train_checkpoint(dir, step, record, ParamLayout(model), stores);
  } else if (grid.world_rank() == 0) {
    save_train_checkpoint(dir, step, record, engine.layout(), stores);
  }
  grid.world().barrier();  // nobody reads `latest` before it exists
}

template <class T>
void load_whole_checkpoint(DataParallel<T>& engine, const std::string& dir_or_step) {
  load_train_checkpoint(dir_or_step, engine.layout(), checkpoint_stores(engine.states()));
  const FlatStore<T>& p = engine.states().params();
  engine.states().sync_compute(p.begin(), p.end());
}

template void save_whole_checkpoint<float>(DataParallel<float>&, const GPTConfig&, const ParallelLayout&,
                                           const RunRecord&, const std::string&, int64_t);
template void save_whole_checkpoint<double>(DataParallel<double>&, const GPTConfig&, const ParallelLayout&,
                                            const RunRecord&, const std::string&, int64_t);
template void load_whole_checkpoint<float>(DataParallel<float>&, const std::string&);
template void load_whole_checkpoint<double>(DataParallel<double>&, const std::string&);

}  // namespace shardlab
