// CPU features from cpuid and XCR0 (see cpu_features.h). Leaf 1 gives SSE3, FMA, AVX and OSXSAVE; leaf 7
// gives AVX2 and the AVX-512 subsets, sub-leaf 1 AVX512_BF16; XGETBV(0) says which register files the
// operating system saves (bits 1–2: SSE/AVX, bits 5–7: the AVX-512 mask and upper registers).
#include "core/cpu_features.h"

#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace shardlab {

namespace {

#if defined(__x86_64__) || defined(__i386__)
unsigned long long xcr0() {
  unsigned int lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<unsigned long long>(hi) << 32) | lo;
}

CpuFeatures read_features() {
  CpuFeatures f;
  f.x86 = true;
  unsigned int a = 0, b = 0, c = 0, d = 0;
  const unsigned int max_leaf = __get_cpuid_max(0, nullptr);
  if (max_leaf >= 1 && __get_cpuid(1, &a, &b, &c, &d)) {
    const bool osxsave = c & (1u << 27);
    const unsigned long long xcr = osxsave ? xcr0() : 0;
    const bool os_avx = (xcr & 0x6) == 0x6, os_avx512 = (xcr & 0xe6) == 0xe6;
    f.sse3 = c & (1u << 0);
    f.fma = os_avx && (c & (1u << 12));
    f.avx = os_avx && (c & (1u << 28));
    if (max_leaf >= 7) {
      __cpuid_count(7, 0, a, b, c, d);
      f.avx2 = f.avx && (b & (1u << 5));
      const unsigned int need = (1u << 16) | (1u << 17) | (1u << 28) | (1u << 30) | (1u << 31);  // F DQ CD BW VL
      f.avx512 = os_avx512 && (b & need) == need;
      const unsigned int sub_leaves = a;
      if (sub_leaves >= 1) {
        __cpuid_count(7, 1, a, b, c, d);
        f.avx512_bf16 = f.avx512 && (a & (1u << 5));
      }
    }
  }
  char brand[49] = {};
  if (__get_cpuid_max(0x80000000, nullptr) >= 0x80000004) {
    for (unsigned int i = 0; i < 3; ++i) {
      __get_cpuid(0x80000002 + i, &a, &b, &c, &d);
      const unsigned int regs[4] = {a, b, c, d};
      std::memcpy(brand + 16 * i, regs, 16);
    }
  }
  f.model = brand;
  const size_t first = f.model.find_first_not_of(' '), last = f.model.find_last_not_of(' ');
  f.model = first == std::string::npos ? "an x86-64 CPU" : f.model.substr(first, last - first + 1);
  return f;
}
#else
CpuFeatures read_features() {
  CpuFeatures f;
#if defined(__aarch64__)
  f.model = "an aarch64 CPU";
#else
  f.model = "a CPU of this build's architecture";
#endif
  return f;
}
#endif

}  // namespace

int CpuFeatures::vector_bits() const {
  if (avx512) return 512;
  if (avx) return 256;
  return 128;
}

std::string CpuFeatures::vector_isa() const {
  if (avx512) return "AVX-512";
  if (avx2 && fma) return "AVX2+FMA";
  if (avx) return "AVX";
  if (x86) return "SSE";
#if defined(__aarch64__)
  return "NEON";
#else
  return "baseline";
#endif
}

std::string build_arch() {
#ifdef SHARDLAB_BUILD_ARCH
  return SHARDLAB_BUILD_ARCH;
#else
  return "unknown";
#endif
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = read_features();
  return f;
}

}  // namespace shardlab
