// The machine's own limit: one core's floating-point peak, measured. A loop of fused multiply-adds on 12
// independent vector registers (enough to cover the FMA latency on every pipe of today's cores) at the
// widest width the CPU has — AVX-512, AVX2 + FMA, AVX, SSE, or the compiler's baseline elsewhere — with no
// memory traffic. Its GFLOP/s is the ceiling that GEMM and training throughput are reported against: a
// ratio to sgemm alone looks fine when sgemm itself runs a slow kernel.
#pragma once
#include <string>

namespace shardlab {

struct FmaPeak {
  double gflops;    // best of a few repeats, 2 FLOPs per lane per FMA
  int vector_bits;  // the width measured
  std::string isa;  // "AVX-512", "AVX2+FMA", …
};

// f64: double lanes (half as many per vector). Takes about 0.3 s.
FmaPeak measure_fma_peak(bool f64);

}  // namespace shardlab
