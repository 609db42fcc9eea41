// What the blocks keep from forward for backward, as a run chooses it (claims C5, C27, C28): the
// attention kernel (naive keeps the s×s probabilities; flash keeps a log-sum-exp per row), recompute
// (none; selective drops the probabilities and recomputes them; full keeps only each block's input) and
// whether saved activations are stored as bf16. Shared by the model (activation_record.h) and the planner
// (plan/activation_items.h), which itemises the same tensors.
#pragma once
#include <string>

#include "core/spelling.h"

namespace shardlab {

enum class Recompute { none, selective, full };
enum class AttentionKernel { naive, flash };
inline constexpr Spelling<Recompute> kRecomputeWords[] = {
    {"none", Recompute::none}, {"selective", Recompute::selective}, {"full", Recompute::full}};
inline constexpr Spelling<AttentionKernel> kAttentionWords[] = {{"naive", AttentionKernel::naive},
                                                                {"flash", AttentionKernel::flash}};
const char* recompute_name(Recompute r);        // none | selective | full
const char* attention_name(AttentionKernel a);  // naive | flash
bool parse_recompute(const std::string& s, Recompute* out);
bool parse_attention_kernel(const std::string& s, AttentionKernel* out);

struct ActivationPolicy {
  bool bf16 = false;  // saved activations stored as bf16
  Recompute recompute = Recompute::none;
  AttentionKernel attention = AttentionKernel::naive;
};

}  // namespace shardlab
