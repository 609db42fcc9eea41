// cli/moe_flags.cpp — the --moe-* flags and their rules (see moe_flags.h).
#include "cli/moe_flags.h"

namespace shardlab::plan {

void define_moe_flags(Flags& f, MoeFlags& v) {
  f.add("--moe-experts", v.experts, "experts E in place of the MLP of every --moe-every-th block");
  f.add("--moe-top-k", v.top_k, "experts per token k");
  f.add("--moe-every", v.every, "MoE in blocks l with l % n == 0");
  f.add("--moe-ffn", v.ffn, "each expert's width F (0: 4·hidden)");
}

std::string moe_flags_problem(const Flags& f, const MoeFlags& v, bool preset, const std::string& preset_hint,
                              std::uint64_t layers) {
  const bool moe = f.given("--moe-experts");
  for (const char* n : {"--moe-top-k", "--moe-every", "--moe-ffn"})
    if (f.given(n) && (!moe || preset)) return std::string(n) + " needs --moe-experts E (without --preset)";
  if (moe && preset) return "--preset fixes the model; drop --moe-experts (" + preset_hint + ")";
  if (!moe) return "";
  if (v.experts < 1 || v.experts > 4096) return "--moe-experts expects an integer in [1, 4096]";
  if (v.top_k < 1 || v.top_k > v.experts)
    return "--moe-top-k " + std::to_string(v.top_k) + " must be between 1 and --moe-experts " +
           std::to_string(v.experts);
  if (v.every < 1 || v.every > layers)
    return "--moe-every " + std::to_string(v.every) + " must be between 1 and --layers " + std::to_string(layers);
  if (v.ffn > (std::uint64_t(1) << 24)) return "--moe-ffn expects an integer in [0, 16777216]";
  return "";
}

ExpertDims moe_dims(const Flags& f, const MoeFlags& v) {
  if (!f.given("--moe-experts")) return ExpertDims{};
  return ExpertDims{v.experts, v.top_k, v.every, v.ffn};
}

}  // namespace shardlab::plan
