// Helpers shared by the optimiser kernels (internal to engine/optim).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "engine/core/parallel.h"
#include "engine/core/parameter.h"

namespace vg::optim {

// K sums at once over i in [0, n): f(i, acc) adds its terms into acc[0..K). The same fixed
// chunks as deterministic_sum, combined in order, so the result does not depend on the
// thread count. f may also write element i (a fused update that measures as it goes).
template <size_t K, class F>
std::array<double, K> deterministic_sums(int64_t n, F&& f) {
  constexpr int64_t kChunk = 4096;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<std::array<double, K>> partial(static_cast<size_t>(chunks), std::array<double, K>{});
  parallel_for(chunks, 4, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      std::array<double, K> acc{};
      for (int64_t i = c * kChunk, e = std::min(n, (c + 1) * kChunk); i < e; ++i) f(i, acc);
      partial[static_cast<size_t>(c)] = acc;
    }
  });
  std::array<double, K> total{};
  for (const auto& acc : partial)
    for (size_t k = 0; k < K; ++k) total[k] += acc[k];
  return total;
}

// Sum of squares of a tensor's values, in double, independent of the thread count.
inline double sum_of_squares(const Tensor& t) {
  return dispatch(t.dtype(), [&](auto z) {
    using T = decltype(z);
    const T* p = t.data<T>();
    return deterministic_sum(t.numel(), [p](int64_t i) {
      const double x = static_cast<double>(p[i]);
      return x * x;
    });
  });
}

}  // namespace vg::optim
