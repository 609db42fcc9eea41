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

// The twelve chains: declare a0…a11 from INIT(i), step each with STEP(a), and fold them into one value.
#define SHARDLAB_CHAINS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define SHARDLAB_CHAIN_LOOP(V, INIT, STEP, SUM)                                \
  V SHARDLAB_CHAINS(DECL) last_ = INIT(12);                                    \
  for (long it = 0; it < iters; ++it) { SHARDLAB_CHAINS(STEP_ONE) }            \
  SHARDLAB_CHAINS(FOLD)                                                        \
  return SUM(last_);
#define DECL(i) a##i = INIT(i),
#define STEP_ONE(i) a##i = STEP(a##i);
#define FOLD(i) last_ = ADD(last_, a##i);

constexpr int kChains = 12;

#if defined(__x86_64__) || defined(__i386__)
// One lane of the folded chains is enough to keep all of them alive (stored: GCC 12 warns falsely about
// the AVX-512 lane extracts).
__attribute__((target("avx512f"))) float first_lane(__m512 a) {
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, a);
  return lanes[0];
}
__attribute__((target("avx512f"))) double first_lane(__m512d a) {
  alignas(64) double lanes[8];
  _mm512_store_pd(lanes, a);
  return lanes[0];
}
#define SUM16(a) first_lane(a)
#define SUM8D(a) first_lane(a)
#define INIT(i) _mm512_set1_ps(1.0f + 0.01f * (i))
#define STEP(a) _mm512_fmadd_ps(a, m, c)
#define ADD(a, b) _mm512_add_ps(a, b)
__attribute__((target("avx512f"))) double chains_avx512_f32(long iters) {
  const __m512 m = _mm512_set1_ps(0.9999999f), c = _mm512_set1_ps(1e-7f);
  SHARDLAB_CHAIN_LOOP(__m512, INIT, STEP, SUM16)
}
#undef INIT
#undef STEP
#undef ADD
#define INIT(i) _mm512_set1_pd(1.0 + 0.01 * (i))
#define STEP(a) _mm512_fmadd_pd(a, m, c)
#define ADD(a, b) _mm512_add_pd(a, b)
__attribute__((target("avx512f"))) double chains_avx512_f64(long iters) {
  const __m512d m = _mm512_set1_pd(0.9999999), c = _mm512_set1_pd(1e-7);
  SHARDLAB_CHAIN_LOOP(__m512d, INIT, STEP, SUM8D)
}
#undef INIT
#undef STEP
#undef ADD
#define INIT(i) _mm256_set1_ps(1.0f + 0.01f * (i))
#define STEP(a) _mm256_fmadd_ps(a, m, c)
#define ADD(a, b) _mm256_add_ps(a, b)
#define SUM8(a) _mm256_cvtss_f32(a)
__attribute__((target("avx2,fma"))) double chains_avx2_f32(long iters) {
  const __m256 m = _mm256_set1_ps(0.9999999f), c = _mm256_set1_ps(1e-7f);
  SHARDLAB_CHAIN_LOOP(__m256, INIT, STEP, SUM8)
}
#undef INIT
#undef STEP
#undef ADD
#define INIT(i) _mm256_set1_pd(1.0 + 0.01 * (i))
#define STEP(a) _mm256_fmadd_pd(a, m, c)
#define ADD(a, b) _mm256_add_pd(a, b)
#define SUM4(a) _mm256_cvtsd_f64(a)
__attribute__((target("avx2,fma"))) double chains_avx2_f64(long iters) {
  const __m256d m = _mm256_set1_pd(0.9999999), c = _mm256_set1_pd(1e-7);
  SHARDLAB_CHAIN_LOOP(__m256d, INIT, STEP, SUM4)
}
#undef INIT
#undef STEP
#undef ADD
// Without FMA (AVX, SSE): a multiply and an add, the same two FLOPs per lane.
#define INIT(i) _mm256_set1_ps(1.0f + 0.01f * (i))
#define STEP(a) _mm256_add_ps(_mm256_mul_ps(a, m), c)
#define ADD(a, b) _mm256_add_ps(a, b)
__attribute__((target("avx"))) double chains_avx_f32(long iters) {
  const __m256 m = _mm256_set1_ps(0.9999999f), c = _mm256_set1_ps(1e-7f);
  SHARDLAB_CHAIN_LOOP(__m256, INIT, STEP, SUM8)
}
#undef INIT
#undef STEP
#undef ADD
#define INIT(i) _mm256_set1_pd(1.0 + 0.01 * (i))
#define STEP(a) _mm256_add_pd(_mm256_mul_pd(a, m), c)
#define ADD(a, b) _mm256_add_pd(a, b)
__attribute__((target("avx"))) double chains_avx_f64(long iters) {
  const __m256d m = _mm256_set1_pd(0.9999999), c = _mm256_set1_pd(1e-7);
  SHARDLAB_CHAIN_LOOP(__m256d, INIT, STEP, SUM4)
}
#undef INIT
#undef STEP
#undef ADD
#define INIT(i) _mm_set1_ps(1.0f + 0.01f * (i))
#define STEP(a) _mm_add_ps(_mm_mul_ps(a, m), c)
#define ADD(a, b) _mm_add_ps(a, b)
double chains_128_f32(long iters) {
  const __m128 m = _mm_set1_ps(0.9999999f), c = _mm_set1_ps(1e-7f);
  SHARDLAB_CHAIN_LOOP(__m128, INIT, STEP, _mm_cvtss_f32)
}
#undef INIT
#undef STEP
#undef ADD
#define INIT(i) _mm_set1_pd(1.0 + 0.01 * (i))
#define STEP(a) _mm_add_pd(_mm_mul_pd(a, m), c)
#define ADD(a, b) _mm_add_pd(a, b)
double chains_128_f64(long iters) {
  const __m128d m = _mm_set1_pd(0.9999999), c = _mm_set1_pd(1e-7);
  SHARDLAB_CHAIN_LOOP(__m128d, INIT, STEP, _mm_cvtsd_f64)
}
#undef INIT
#undef STEP
#undef ADD
#elif defined(__aarch64__)
#define INIT(i) vdupq_n_f32(1.0f + 0.01f * (i))
#define STEP(a) vfmaq_f32(c, a, m)
#define ADD(a, b) vaddq_f32(a, b)
double chains_128_f32(long iters) {
  const float32x4_t m = vdupq_n_f32(0.9999999f), c = vdupq_n_f32(1e-7f);
  SHARDLAB_CHAIN_LOOP(float32x4_t, INIT, STEP, vaddvq_f32)
}
#undef INIT
#undef STEP
#undef ADD
#define INIT(i) vdupq_n_f64(1.0 + 0.01 * (i))
#define STEP(a) vfmaq_f64(c, a, m)
#define ADD(a, b) vaddq_f64(a, b)
double chains_128_f64(long iters) {
  const float64x2_t m = vdupq_n_f64(0.9999999), c = vdupq_n_f64(1e-7);
  SHARDLAB_CHAIN_LOOP(float64x2_t, INIT, STEP, vaddvq_f64)
}
#undef INIT
#undef STEP
#undef ADD
#else
// Any other architecture: scalar chains, whatever the compiler makes of them.
#define INIT(i) (1.0f + 0.01f * (i))
#define STEP(a) (a * m + c)
#define ADD(a, b) (a + b)
#define SAME(a) (a)
double chains_128_f32(long iters) {
  const float m = 0.9999999f, c = 1e-7f;
  SHARDLAB_CHAIN_LOOP(float, INIT, STEP, SAME)
}
double chains_128_f64(long iters) {
  const double m = 0.9999999, c = 1e-7;
  SHARDLAB_CHAIN_LOOP(double, INIT, STEP, SAME)
}
#undef INIT
#undef STEP
#undef ADD
#endif
#undef DECL
#undef STEP_ONE
#undef FOLD
#undef SHARDLAB_CHAIN_LOOP
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
