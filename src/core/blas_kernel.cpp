// The BLAS kernel chosen by the CPU's features (see blas_kernel.h). The restart carries two variables of
// ours beside OPENBLAS_CORETYPE: SHARDLAB_BLAS_CHOSEN (the kernel we set: an OPENBLAS_CORETYPE equal to it
// is ours, any other the user's) and SHARDLAB_BLAS_FALLBACK (what OpenBLAS had picked by itself, for the
// header). A failed restart leaves the process as it was and says so in the description.
#include "core/blas_kernel.h"

#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/cpu_features.h"

namespace shardlab {

namespace {

constexpr const char* kChosen = "SHARDLAB_BLAS_CHOSEN";
constexpr const char* kFallback = "SHARDLAB_BLAS_FALLBACK";

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return s;
}

const char* tier_isa(int tier) {
  static const char* names[] = {"", "SSE", "AVX", "AVX2", "AVX-512"};
  return names[tier];
}

std::string restart_error;  // why the restart failed, if it did

}  // namespace

int blas_kernel_tier(const std::string& name) {
  const std::string n = lower(name);
  for (const char* k : {"skylakex", "cooperlake", "sapphirerapids"})
    if (n == k) return 4;
  for (const char* k : {"haswell", "zen"})
    if (n == k) return 3;
  for (const char* k : {"sandybridge", "bulldozer", "piledriver", "steamroller", "excavator"})
    if (n == k) return 2;
  for (const char* k : {"prescott", "core2", "penryn", "dunnington", "nehalem", "atom", "opteron", "barcelona",
                        "bobcat", "katmai", "coppermine", "northwood", "banias", "athlon", "opteron_sse3"})
    if (n == k) return 1;
  return 0;
}

namespace {
bool same_name(const std::string& a, const std::string& b) {  // OpenBLAS reads OPENBLAS_CORETYPE in any case
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}
}  // namespace

std::string best_blas_kernel() {
  const CpuFeatures& f = cpu_features();
  if (!f.x86) return "";
  if (f.avx512) return f.avx512_bf16 ? "Cooperlake" : "SkylakeX";
  if (f.avx2 && f.fma) return "Haswell";
  if (f.avx) return "Sandybridge";
  if (f.sse3) return "Prescott";
  return "";
}

void use_best_blas_kernel(char** argv) {
  const std::string forced = env("OPENBLAS_CORETYPE");
  if (!forced.empty()) return;  // the user's choice, or ours after the restart
  const std::string config = openblas_get_config();
  if (config.find("DYNAMIC_ARCH") == std::string::npos) return;  // one kernel built in: nothing to choose
  const std::string best = best_blas_kernel(), now = openblas_get_corename();
  // A kernel name we don't know is newer than this table: keep it.
  const int tier_now = blas_kernel_tier(now);
  if (best.empty() || tier_now == 0 || tier_now >= blas_kernel_tier(best)) return;
  setenv("OPENBLAS_CORETYPE", best.c_str(), 1);
  setenv(kChosen, best.c_str(), 1);
  setenv(kFallback, now.c_str(), 1);
  execv("/proc/self/exe", argv);
  restart_error = std::strerror(errno);  // still the old kernel: say so, and run on
  unsetenv("OPENBLAS_CORETYPE");
  unsetenv(kChosen);
  unsetenv(kFallback);
}

const BlasKernel& blas_kernel() {
  static const BlasKernel k = [] {
    BlasKernel b;
    b.name = openblas_get_corename();
    b.isa = tier_isa(blas_kernel_tier(b.name));
    const std::string forced = env("OPENBLAS_CORETYPE"), best = best_blas_kernel();
    if (!forced.empty() && forced == env(kChosen))
      b.how = "chosen by the CPU's features (" + cpu_features().vector_isa() + "; OpenBLAS alone picked " +
              env(kFallback) + ")";
    else if (!forced.empty() && !same_name(forced, b.name))  // OpenBLAS ignores a name it has no kernel for
      b.how = "OpenBLAS's choice: it has no kernel named OPENBLAS_CORETYPE=" + forced + " (or not for this CPU)" +
              (best.empty() ? std::string() : "; this CPU's best is " + best);
    else if (!forced.empty()) {
      b.how = "set by OPENBLAS_CORETYPE=" + forced;
      if (!best.empty() && blas_kernel_tier(b.name) < blas_kernel_tier(best))
        b.how += " (this CPU could run " + best + ", " + tier_isa(blas_kernel_tier(best)) + ")";
    } else if (!restart_error.empty())
      b.how = "OpenBLAS's choice; the CPU could run " + best + " but restarting with it failed (" + restart_error +
              "): set OPENBLAS_CORETYPE=" + best;
    else if (!best.empty())
      b.how = "OpenBLAS's choice, the widest this CPU has (" + cpu_features().vector_isa() + ")";
    else
      b.how = "OpenBLAS's choice";
    return b;
  }();
  return k;
}

}  // namespace shardlab
