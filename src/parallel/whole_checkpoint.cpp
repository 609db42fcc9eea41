// Checkpoints of any layout hold whole tensors (see data_parallel.h): ZeRO shards are first all-gathered
// inside their dp group (save_checkpoint), then every distinct slice — one per (pipeline stage,
// tensor-parallel rank), the ranks whose dp coordinate is 0 — travels to world rank 0, which puts each
// tensor, or each slice of one, in its place in the whole model's stores (model/param_layout.h
// place_slices) and writes them. World rank 0 knows every sender's layout from the configuration alone.
#include <cstring>

#include "parallel/data_parallel.h"
#include "parallel/pipeline_partition.h"

namespace shardlab {

template <class T>
void DataParallel<T>::assemble_whole(NamedStores<T>& stores, std::vector<std::unique_ptr<FlatStore<T>>>& keep) {
  // World ranks with dp coordinate 0 are 0 … pp·tp − 1: rank w holds stage w / tp's units, slice w % tp.
  const int tp = grid_.size(Axis::tp), pp = grid_.size(Axis::pp), senders = tp * pp, me = grid_.world_rank();
  const PipelinePartition part = partition_layers(cfg_.model.layers, pp, cfg_.virtual_stages, cfg_.pp_layers);
  auto layout_of = [&](int w) { return ParamLayout(cfg_.model, cfg_.slice(w % tp), part.held_units(w / tp)); };
  Communicator& world = grid_.world();
  if (me != 0) {
    for (size_t i = 0; i < stores.size(); ++i) {
      const FlatStore<T>& s = *stores[i].second;
      if (s.is_bf16())
        world.send(s.h(0), layout_.total(), 0, int(i));
      else
        world.send(s.t(0), layout_.total(), 0, int(i));
    }
    return;
  }
  const ParamLayout whole(cfg_.model);
  for (size_t i = 0; i < stores.size(); ++i) {
    FlatStore<T>*& store = stores[i].second;
    const size_t eb = store->elem_bytes();
    keep.push_back(std::make_unique<FlatStore<T>>(ledger_, Mem::workspace, store->is_bf16(), 0, whole.total()));
    FlatStore<T>& out = *keep.back();
    place_slices(layout_, static_cast<const unsigned char*>(store->raw(0)), whole,
                 static_cast<unsigned char*>(out.raw(0)), eb);
    for (int w = 1; w < senders; ++w) {
      const ParamLayout theirs = layout_of(w);
      FlatStore<T> got(ledger_, Mem::workspace, store->is_bf16(), 0, theirs.total());
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

template class DataParallel<float>;
template class DataParallel<double>;

}  // namespace shardlab
