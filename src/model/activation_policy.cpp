// Names of the activation policies (see activation_policy.h).
#include "model/activation_policy.h"

namespace shardlab {

const char* recompute_name(Recompute r) {
  return r == Recompute::full ? "full" : r == Recompute::selective ? "selective" : "none";
}
const char* attention_name(AttentionKernel a) { return a == AttentionKernel::flash ? "flash" : "naive"; }

bool parse_recompute(const std::string& s, Recompute* out) {
  if (s == "none")
    *out = Recompute::none;
  else if (s == "selective")
    *out = Recompute::selective;
  else if (s == "full")
    *out = Recompute::full;
  else
    return false;
  return true;
}

bool parse_attention_kernel(const std::string& s, AttentionKernel* out) {
  if (s == "naive")
    *out = AttentionKernel::naive;
  else if (s == "flash")
    *out = AttentionKernel::flash;
  else
    return false;
  return true;
}

}  // namespace shardlab
