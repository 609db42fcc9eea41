// Which model states a recipe keeps, and its one-line label (see recipe.h).
#include "optim/recipe.h"

#include <sstream>

namespace shardlab {

bool Recipe::keeps(Mem c) const {
  switch (c) {
    case Mem::param:
    case Mem::grad: return true;
    case Mem::master: return bf16() && master == Master::fp32;
    case Mem::adam_m:
    case Mem::adam_v: return optimizer == Optimizer::adamw || optimizer == Optimizer::adam8bit;
    case Mem::momentum: return optimizer == Optimizer::sgd && momentum > 0;
    default: return false;
  }
}

std::string recipe_label(const Recipe& r) {
  std::string s = optimizer_name(r.optimizer);
  if (r.optimizer == Optimizer::sgd) {
    std::ostringstream m;
    m << r.momentum;
    s += " (momentum " + m.str() + ")";
  }
  if (r.bf16())
    s += std::string(", mixed bf16, grad accum ") + grad_accum_name(r.grad_accum) + ", master " + master_name(r.master);
  else
    s += std::string(", pure ") + dtype_name(r.dtype);
  return s;
}

}  // namespace shardlab
