// Threads for elementwise and reduction kernels (OpenMP), and the thread count that the
// engine and OpenBLAS share.
//
// Work is split into contiguous static ranges, and every reduction sums fixed chunks in a
// fixed order, so the same inputs give the same bits at any thread count.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace vg {

int num_threads();
// Sets the engine's threads; OpenBLAS stays single-threaded (engine/kernels/blas.h splits products).
void set_num_threads(int n);

// Calls f(begin, end) over [0, n) split into at most num_threads() ranges; runs inline when
// the work is smaller than about two grains or when already inside a parallel region.
template <class F>
void parallel_for(int64_t n, int64_t grain, F&& f) {
  const int threads = num_threads();
  if (n <= 0) return;
  if (threads <= 1 || n < 2 * grain || omp_in_parallel()) {
    f(int64_t{0}, n);
    return;
  }
  const int parts = static_cast<int>(std::min<int64_t>(threads, (n + grain - 1) / grain));
#pragma omp parallel num_threads(parts)
  {
    const int64_t id = omp_get_thread_num();
    const int64_t begin = n * id / parts, end = n * (id + 1) / parts;
    if (begin < end) f(begin, end);
  }
}

// Sum of f(i) for i in [0, n), accumulated in double over fixed chunks of 4096 that are
// combined in order: the result does not depend on the thread count.
template <class F>
double deterministic_sum(int64_t n, F&& f) {
  constexpr int64_t kChunk = 4096;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  if (chunks <= 1) {
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += f(i);
    return s;
  }
  double partial_stack[64];
  double* partial = chunks <= 64 ? partial_stack : new double[chunks];
  parallel_for(chunks, 4, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      double s = 0;
      for (int64_t i = c * kChunk, e = std::min(n, (c + 1) * kChunk); i < e; ++i) s += f(i);
      partial[c] = s;
    }
  });
  double total = 0;
  for (int64_t c = 0; c < chunks; ++c) total += partial[c];
  if (partial != partial_stack) delete[] partial;
  return total;
}

}  // namespace vg
