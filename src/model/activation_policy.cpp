// Names of the activation policies (see activation_policy.h).
#include "model/activation_policy.h"

namespace shardlab {

const char* recompute_name(Recompute r) { return word_of(kRecomputeWords, r); }
const char* attention_name(AttentionKernel a) { return word_of(kAttentionWords, a); }
bool parse_recompute(const std::string& s, Recompute* out) { return read_word(kRecomputeWords, s, out); }
bool parse_attention_kernel(const std::string& s, AttentionKernel* out) { return read_word(kAttentionWords, s, out); }

}  // namespace shardlab
