#include "engine/kernels/units_peak.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <numeric>
#include <vector>

#include "engine/core/parallel.h"
#include "engine/kernels/gemm_simd.h"
#include "engine/kernels/matmul_precision.h"

namespace vg {
namespace {

// Enough independent chains to hide each unit's latency (4 to 6 cycles, two units a core).
constexpr int kChains = 12;
constexpr int64_t kIterations = 20'000'000;  // about 65 ms a run at one step a cycle

// The empty asm makes `x` unknown to the compiler each time round, so that it can neither fold
// the chains nor hoist them out of the loop; it costs no instruction.
#define VG_OPAQUE(x) __asm__ volatile("" : "+v"(x))

// The sum of every lane of the chains (stored and added: GCC 12's reduction intrinsic warns).
__attribute__((target("avx512f"))) float lanes_sum(const __m512 (&acc)[kChains]) {
  alignas(64) float lanes[16];
  float sum = 0;
  for (const __m512& a : acc) {
    _mm512_store_ps(lanes, a);
    for (float v : lanes) sum += v;
  }
  return sum;
}

__attribute__((target("avx512f"))) float avx512_fma_chains(int64_t iterations) {
  __m512 acc[kChains];
  for (__m512& a : acc) a = _mm512_setzero_ps();
  __m512 x = _mm512_set1_ps(1.0f), y = _mm512_set1_ps(1e-7f);
  for (int64_t it = 0; it < iterations; ++it) {
    for (__m512& a : acc) a = _mm512_fmadd_ps(x, y, a);
    VG_OPAQUE(x);
  }
  return lanes_sum(acc);
}

__attribute__((target("avx2,fma"))) float avx2_fma_chains(int64_t iterations) {
  __m256 acc[kChains];
  for (__m256& a : acc) a = _mm256_setzero_ps();
  __m256 x = _mm256_set1_ps(1.0f), y = _mm256_set1_ps(1e-7f);
  for (int64_t it = 0; it < iterations; ++it) {
    for (__m256& a : acc) a = _mm256_fmadd_ps(x, y, a);
    VG_OPAQUE(x);
  }
  alignas(32) float lanes[8];
  float sum = 0;
  for (const __m256& a : acc) {
    _mm256_store_ps(lanes, a);
    for (float v : lanes) sum += v;
  }
  return sum;
}

__attribute__((target("avx512f,avx512bf16"))) float bf16_dot_chains(int64_t iterations) {
  __m512 acc[kChains];
  for (__m512& a : acc) a = _mm512_setzero_ps();
  __m512i x = _mm512_set1_epi16(0x3f80), y = _mm512_set1_epi16(0x3380);  // 1 and about 6e-8
  for (int64_t it = 0; it < iterations; ++it) {
    for (__m512& a : acc) a = _mm512_dpbf16_ps(a, (__m512bh)x, (__m512bh)y);
    VG_OPAQUE(x);
  }
  return lanes_sum(acc);
}

#undef VG_OPAQUE

// One kind of chains and the FLOPs one chain step does (lanes x 2 per multiply-add).
struct Chains {
  float (*run)(int64_t iterations);
  double flops_per_step;
};
constexpr Chains kBf16DotChains{bf16_dot_chains, 16 * 2 * 2};

// The fmas the float products run on (detail::float_tiles()); `run` is null where they run on
// neither.
Chains float_fma_chains() {
  switch (detail::float_tiles()) {
    case detail::FloatTiles::avx512:
      return {avx512_fma_chains, 16 * 2};
    case detail::FloatTiles::avx2:
      return {avx2_fma_chains, 8 * 2};
    case detail::FloatTiles::none:
      break;
  }
  return {nullptr, 0};
}

// The best of three runs of `chains` on every engine thread at once, as GFLOP/s. Each thread
// times its own range of runs, so a thread that wakes late does not count as slow units, and
// the ranges' rates add up. (Timing each run apart would count twice the runs of one range,
// which one thread does in turn: all of them where parallel_for runs serially, inside a
// parallel region.) Over wall time, unlike rate_on_this_thread below: with more engine threads
// than cores the threads share the units, and their processor-time rates would add up to more
// units than there are.
double best_rate(Chains chains) {
  const int threads = num_threads();
  const double flops = double(kIterations) * kChains * chains.flops_per_step;  // a thread's
  double best = 0;
  for (int run = 0; run < 3; ++run) {
    std::vector<float> sums(size_t(threads), 0.0f);   // read below, so the chains are kept
    std::vector<double> rates(size_t(threads), 0.0);  // a range's, at its first index
    parallel_for(threads, 1, [&](int64_t first, int64_t end) {
      const auto start = std::chrono::steady_clock::now();
      for (int64_t t = first; t < end; ++t) sums[size_t(t)] = chains.run(kIterations);
      const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
      rates[size_t(first)] = double(end - first) * flops / took.count() / 1e9;
    });
    volatile float kept = std::accumulate(sums.begin(), sums.end(), 0.0f);
    (void)kept;
    best = std::max(best, std::accumulate(rates.begin(), rates.end(), 0.0));
  }
  return best;
}

// Seconds of processor time the calling thread has had.
double thread_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

// GFLOP/s of one run of `chains`, `iterations` steps long, on the calling thread, over the
// processor time it had, so that a run other threads interrupt does not count as slow units.
// Over wall time, with a busy thread on the same core, the dot products' rate over the fmas'
// read anywhere from 0.54 to 4.35 on an AMD EPYC of family 26 (a Zen 5: 1.8 when idle), and
// on a machine busy with other work it fell below 1.5, where --amp auto picks fp32, in about
// one measurement in five.
double rate_on_this_thread(Chains chains, int64_t iterations) {
  const double start = thread_seconds();
  volatile float kept = chains.run(iterations);
  (void)kept;
  return double(iterations) * kChains * chains.flops_per_step / (thread_seconds() - start) / 1e9;
}

}  // namespace

double float_units_peak_gflops() {
  const Chains fmas = float_fma_chains();
  return fmas.run ? best_rate(fmas) : 0;
}

double bf16_dot_peak_gflops() {
  if (bf16_hardware() == Bf16Hardware::none) return 0;
  return best_rate(kBf16DotChains);
}

double bf16_dot_over_float_fmas_one_core() {
  const Chains fmas = float_fma_chains();
  if (bf16_hardware() == Bf16Hardware::none || !fmas.run) return 0;
  // A tenth of a peak run each (under 0.1 s in all): the two rates differ by a factor of two
  // either way on the CPUs there are, far more than a short run's noise.
  constexpr int64_t kShortIterations = kIterations / 10;
  double best_fmas = 0, best_dots = 0;
  for (int run = 0; run < 3; ++run) {  // in turn, so that a slow spell slows both
    best_fmas = std::max(best_fmas, rate_on_this_thread(fmas, kShortIterations));
    best_dots = std::max(best_dots, rate_on_this_thread(kBf16DotChains, kShortIterations));
  }
  return best_dots / best_fmas;
}

}  // namespace vg
