// What this CPU can execute, read from the CPU itself (cpuid on x86-64) rather than from its model number:
// the vector instruction sets that matter for floating-point throughput (SSE3, AVX, AVX2 + FMA, AVX-512 and
// its bf16 extension), each counted only when the operating system also saves the wider registers (XCR0).
// On other architectures every x86 flag is false and the vector width is the compiler's baseline (128 bits
// of NEON on aarch64). Used to choose the BLAS kernel (core/blas_kernel.h) and to measure the FMA peak.
#pragma once
#include <string>

namespace shardlab {

struct CpuFeatures {
  bool x86 = false;  // the flags below were read with cpuid
  bool sse3 = false, avx = false, avx2 = false, fma = false;
  bool avx512 = false;             // AVX-512 F, CD, BW, DQ and VL: OpenBLAS's SkylakeX kernels
  bool avx512_bf16 = false;        // also AVX512_BF16: its Cooperlake kernels
  std::string model;               // the brand string ("AMD EPYC …"), or the architecture's name
  int vector_bits() const;         // widest floating-point vector this process may use: 512, 256, 128
  std::string vector_isa() const;  // "AVX-512", "AVX2+FMA", "AVX", "SSE", or "NEON"/"baseline"
};

// Read once per process.
const CpuFeatures& cpu_features();

// What this binary's own code was compiled for (the Makefile's ARCH): "avx2-fma" — the same instructions,
// hence the same bits, on every x86-64 CPU with AVX2 and FMA — or "native" (this CPU alone).
std::string build_arch();

}  // namespace shardlab
