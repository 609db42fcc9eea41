// The single-core FMA peak (see fma_peak.h). Each width is one function compiled for its instruction set
// (a target attribute, so the build need not assume it) and called only when cpu_features() has it. Every
// step is a = a·m + c on 12 registers that never touch memory; m is just below 1 and c tiny, so the values
// stay finite for any iteration count.
#include "core/fma_peak.h"

#include <algorithm>
#include <chrono>

#include "core/cpu_features.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace shardlab {

namespace {

constexpr int kChains = 12;

// One function per width and type, each compiled for its instruction set: 12 chains a = STEP(a, m, c),
// iters times, folded into one value that is returned (so nothing can be left out).
#define SHARDLAB_CHAINS(NAME, TARGET, V, SET, STEP, ADD, FIRST)                                                   \
  TARGET double NAME(long iters) {                                                                                \
    const V m = SET(0.9999999), c = SET(1e-7);                                                                    \
    V a0 = SET(1.00), a1 = SET(1.01), a2 = SET(1.02), a3 = SET(1.03), a4 = SET(1.04), a5 = SET(1.05);             \
    V a6 = SET(1.06), a7 = SET(1.07), a8 = SET(1.08), a9 = SET(1.09), a10 = SET(1.10), a11 = SET(1.11);           \
    for (long it = 0; it < iters; ++it) {                                                                         \
      a0 = STEP(a0, m, c), a1 = STEP(a1, m, c), a2 = STEP(a2, m, c), a3 = STEP(a3, m, c);                         \
      a4 = STEP(a4, m, c), a5 = STEP(a5, m, c), a6 = STEP(a6, m, c), a7 = STEP(a7, m, c);                         \
      a8 = STEP(a8, m, c), a9 = STEP(a9, m, c), a10 = STEP(a10, m, c), a11 = STEP(a11, m, c);                     \
    }                                                                                                             \
    return FIRST(                                                                                                 \
        ADD(ADD(ADD(ADD(a0, a1), ADD(a2, a3)), ADD(ADD(a4, a5), ADD(a6, a7))), ADD(ADD(a8, a9), ADD(a10, a11)))); \
  }

#if defined(__x86_64__) || defined(__i386__)
#define AVX512 __attribute__((target("avx512f")))
#define AVX2 __attribute__((target("avx2,fma")))
#define AVX __attribute__((target("avx")))
// Lane 0, stored (GCC 12 warns falsely about its AVX-512 lane extracts).
AVX512 float first_lane(__m512 a) {
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, a);
  return lanes[0];
}
AVX512 double first_lane(__m512d a) {
  alignas(64) double lanes[8];
  _mm512_store_pd(lanes, a);
  return lanes[0];
}
// Without FMA (AVX, SSE): a multiply and an add, the same two FLOPs per lane.
#define MULADD256PS(a, m, c) _mm256_add_ps(_mm256_mul_ps(a, m), c)
#define MULADD256PD(a, m, c) _mm256_add_pd(_mm256_mul_pd(a, m), c)
#define MULADD128PS(a, m, c) _mm_add_ps(_mm_mul_ps(a, m), c)
#define MULADD128PD(a, m, c) _mm_add_pd(_mm_mul_pd(a, m), c)
SHARDLAB_CHAINS(chains_avx512_f32, AVX512, __m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps, first_lane)
SHARDLAB_CHAINS(chains_avx512_f64, AVX512, __m512d, _mm512_set1_pd, _mm512_fmadd_pd, _mm512_add_pd, first_lane)
SHARDLAB_CHAINS(chains_avx2_f32, AVX2, __m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps, _mm256_cvtss_f32)
SHARDLAB_CHAINS(chains_avx2_f64, AVX2, __m256d, _mm256_set1_pd, _mm256_fmadd_pd, _mm256_add_pd, _mm256_cvtsd_f64)
SHARDLAB_CHAINS(chains_avx_f32, AVX, __m256, _mm256_set1_ps, MULADD256PS, _mm256_add_ps, _mm256_cvtss_f32)
SHARDLAB_CHAINS(chains_avx_f64, AVX, __m256d, _mm256_set1_pd, MULADD256PD, _mm256_add_pd, _mm256_cvtsd_f64)
SHARDLAB_CHAINS(chains_128_f32, , __m128, _mm_set1_ps, MULADD128PS, _mm_add_ps, _mm_cvtss_f32)
SHARDLAB_CHAINS(chains_128_f64, , __m128d, _mm_set1_pd, MULADD128PD, _mm_add_pd, _mm_cvtsd_f64)
#elif defined(__aarch64__)
#define FMA_F32(a, m, c) vfmaq_f32(c, a, m)
#define FMA_F64(a, m, c) vfmaq_f64(c, a, m)
SHARDLAB_CHAINS(chains_128_f32, , float32x4_t, vdupq_n_f32, FMA_F32, vaddq_f32, vaddvq_f32)
SHARDLAB_CHAINS(chains_128_f64, , float64x2_t, vdupq_n_f64, FMA_F64, vaddq_f64, vaddvq_f64)
#else
// Any other architecture: scalar chains, whatever the compiler makes of them.
#define SCALAR_F32(x) float(x)
#define SCALAR_F64(x) double(x)
#define MULADD(a, m, c) ((a) * (m) + (c))
#define PLUS(a, b) ((a) + (b))
#define SAME(a) (a)
SHARDLAB_CHAINS(chains_128_f32, , float, SCALAR_F32, MULADD, PLUS, SAME)
SHARDLAB_CHAINS(chains_128_f64, , double, SCALAR_F64, MULADD, PLUS, SAME)
#endif
#undef SHARDLAB_CHAINS

volatile double sink;  // keeps every chain's result alive

}  // namespace

FmaPeak measure_fma_peak(bool f64) {
  const CpuFeatures& f = cpu_features();
  double (*chains)(long) = f64 ? chains_128_f64 : chains_128_f32;
  int bits = 128;
#if defined(__x86_64__) || defined(__i386__)
  if (f.avx512) {
    chains = f64 ? chains_avx512_f64 : chains_avx512_f32;
    bits = 512;
  } else if (f.avx2 && f.fma) {
    chains = f64 ? chains_avx2_f64 : chains_avx2_f32;
    bits = 256;
  } else if (f.avx) {
    chains = f64 ? chains_avx_f64 : chains_avx_f32;
    bits = 256;
  }
#elif !defined(__aarch64__)
  bits = f64 ? 64 : 32;  // scalar
#endif
  const int lanes = bits / (f64 ? 64 : 32);
  using clock = std::chrono::steady_clock;
  double best = 0;
  long iters = 1 << 16;
  for (int rep = 0; rep < 4; ++rep) {  // the first repeat also finds an iteration count of ~0.07 s
    const clock::time_point t0 = clock::now();
    sink = chains(iters);
    const double s = std::chrono::duration<double>(clock::now() - t0).count();
    best = std::max(best, 2.0 * lanes * kChains * double(iters) / s / 1e9);
    if (s < 0.05) iters = long(double(iters) * 0.07 / std::max(s, 1e-6));
  }
  return {best, bits, f.vector_isa()};
}

}  // namespace shardlab
