// Asks the caches for the lines of a tile of C, to be written, before the tile's sums start.
// A tile writes its part of C once, at its end. Where C is a linear layer's output over a
// batch (megabytes, past L2), each of those lines is a miss, and a store to a missing line
// waits for it to be read in; asked for at the start, the lines arrive while the tile sums
// its k terms. The tiles ask only where they write C without reading it (beta = 0): where
// they read it first (a weight gradient's later chunks of k), C is small and in cache, and
// asking for it again made those products slower. Prefetches read nothing into registers and
// never fault, so a tile at C's edge may ask for a line past it. Internal to the tiles
// (gemm_avx512.cpp, gemm_avx2.cpp, bf16_gemm_avx512.cpp).
#pragma once

#include <cstdint>

namespace vg::detail {

// The lines of rows x cols floats of c (rows ldc apart), for writing.
template <int Rows>
inline void prefetch_tile_for_write(const float* c, int64_t ldc, int cols) {
  const int64_t bytes = int64_t(cols) * int64_t(sizeof(float));
#pragma GCC unroll 12
  for (int r = 0; r < Rows; ++r) {
    const char* row = reinterpret_cast<const char*>(c + r * ldc);
    for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch(row + b, 1, 3);
    __builtin_prefetch(row + bytes - 1, 1, 3);  // a row that is not aligned ends in one more line
  }
}

}  // namespace vg::detail
