// The CPU's features and the GEMM kernel chosen from them (core/cpu_features.h, core/blas_kernel.h): the
// tier table, cpuid against the kernel's own /proc/cpuinfo, and the FMA peak's arithmetic.
#include <catch2/catch.hpp>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "core/blas_kernel.h"
#include "core/cpu_features.h"
#include "core/fma_peak.h"

using namespace shardlab;

TEST_CASE("kernel tiers order OpenBLAS's x86 kernels by their vector instructions", "[core][cpu]") {
  CHECK(blas_kernel_tier("Prescott") == 1);
  CHECK(blas_kernel_tier("Nehalem") == 1);
  CHECK(blas_kernel_tier("Sandybridge") == 2);
  CHECK(blas_kernel_tier("Haswell") == 3);
  CHECK(blas_kernel_tier("ZEN") == 3);  // OpenBLAS's names, in any case
  CHECK(blas_kernel_tier("SkylakeX") == 4);
  CHECK(blas_kernel_tier("Cooperlake") == 4);
  CHECK(blas_kernel_tier("neoversen1") == 0);  // not an x86 kernel we know: never overruled
}

TEST_CASE("cpuid agrees with the operating system's /proc/cpuinfo flags", "[core][cpu]") {
  std::ifstream in("/proc/cpuinfo");
  std::string line, flags;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0) {
      flags = line.substr(line.find(':') + 1);
      break;
    }
  const CpuFeatures& f = cpu_features();
  if (flags.empty() || !f.x86) {
    CHECK(best_blas_kernel().empty() == !f.x86);
    return;
  }
  std::set<std::string> has;
  std::istringstream words(flags);
  for (std::string w; words >> w;) has.insert(w);
  auto all = [&](std::initializer_list<const char*> names) {
    for (const char* n : names)
      if (!has.count(n)) return false;
    return true;
  };
  INFO("model " << f.model << ", flags:" << flags);
  CHECK(f.avx == has.count("avx"));
  CHECK(f.fma == has.count("fma"));
  CHECK(f.avx2 == has.count("avx2"));
  CHECK(f.avx512 == all({"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"}));
  CHECK(f.avx512_bf16 == (f.avx512 && has.count("avx512_bf16")));
  const std::string best = best_blas_kernel();
  if (f.avx512)
    CHECK(best == (f.avx512_bf16 ? "Cooperlake" : "SkylakeX"));
  else if (f.avx2 && f.fma)
    CHECK(best == "Haswell");
  else if (f.avx)
    CHECK(best == "Sandybridge");
  CHECK(f.vector_bits() == (f.avx512 ? 512 : f.avx ? 256 : 128));
}

TEST_CASE("the FMA peak is measured at the CPU's widest vectors", "[core][cpu]") {
  const FmaPeak f32 = measure_fma_peak(false);
  CHECK(f32.vector_bits == cpu_features().vector_bits());
  CHECK(f32.isa == cpu_features().vector_isa());
  CHECK(f32.gflops > 0);
}
