// How a layout hands the model its weights and takes its gradients, one unit at a time (units of the
// parameter layout: embeddings, each block, final LN + head). Pointers address the unit's own range:
// element (flat offset o) is at ptr[o - layout.unit_begin(u)]. Forward visits a chunk's units in order,
// backward in reverse; each *_done call says the unit is finished with. A layout decides where weights
// live: one flat buffer (single process, DP), or gathered just in time and freed (ZeRO-3/FSDP).
#pragma once
#include "core/exact_sum.h"
#include "model/param_layout.h"
#include "model/row_split.h"

namespace shardlab {

template <class T>
class UnitAccess {
 public:
  virtual ~UnitAccess() = default;
  virtual const T* params(int unit, bool backward) = 0;
  virtual void params_done(int unit, bool backward) {}
  virtual T* grads(int unit) = 0;  // backward accumulates into it
  virtual void grads_done(int unit) {}
  // The exact mode (model/row_split.h): the products of a micro-batch of `samples` run one sample at a time, and
  // sample g's gradients of unit u go to grads(u) + g·grad_stride(u). Called before a micro-batch's forward and
  // backward. Default: one product for all rows, every sample into one copy.
  virtual RowSplit split(int unit, int samples) { return {}; }
  // The exact mode: unit u's order-free gradient sums (element o at [o − layout.unit_begin(u)]), where the tensors
  // whole on every tp rank add each token's contribution directly. Null otherwise.
  virtual ExactSum* exact_sums(int unit) { return nullptr; }
};

// The simplest layout: everything in two flat buffers.
template <class T>
class FlatAccess : public UnitAccess<T> {
 public:
  FlatAccess(const ParamLayout& layout, const T* params, T* grads) : layout_(layout), params_(params), grads_(grads) {}
  const T* params(int unit, bool) override { return params_ + layout_.unit_begin(unit); }
  T* grads(int unit) override { return grads_ + layout_.unit_begin(unit); }

 private:
  const ParamLayout& layout_;
  const T* params_;
  T* grads_;
};

}  // namespace shardlab
