// The AVX512-BF16 tiles of a bf16 product: vdpbf16ps multiplies a pair of A's terms,
// broadcast to all 16 lanes, by the pairs of 16 columns of B and adds both products to 16
// float sums, 32 multiply-adds per instruction (twice an fp32 fma's).
#include <immintrin.h>

#include <algorithm>

#include "engine/kernels/bf16_gemm_parts.h"
#include "engine/kernels/prefetch_tile.h"
#include "engine/kernels/store_tile.h"

namespace vg::detail {
namespace {

// A tile of C is R rows by V * 16 columns: at most 6 x 4, whose 24 sums, 4 vectors of B and a
// broadcast take 29 of the 32 zmm registers, enough chains to hide vdpbf16ps's latency.
constexpr int kRows = 6, kVectors = 4, kLanes = 16;
// Rows handled against one panel before the next, so their pairs of A stay in L1.
constexpr int64_t kBlockRows = 8 * kRows;
// One column of vectors (n at most 16, e.g. an attention head of 16): 12 rows, 12 chains.
constexpr int kNarrowRows = 12;

// C[R x 16V] = alpha * (start + A B) + beta * C over `pairs` pairs, the last vector masked to
// `last`. A_CONTIGUOUS: a row's pairs lie next to each other (stride `ld` between rows);
// otherwise one pair's rows do (stride `ld` between pairs).
template <bool A_CONTIGUOUS, int R, int V>
__attribute__((target("avx512f,avx512bf16"))) void tile(int64_t pairs, const uint32_t* a,
                                                        int64_t ld, const uint32_t* b, int64_t ldb,
                                                        float alpha, float beta, const float* start,
                                                        float* c, int64_t ldc, __mmask16 last) {
  if (beta == 0.0f) prefetch_tile_for_write<R>(c, ldc, (V - 1) * kLanes + __builtin_popcount(last));
  __m512 acc[R][V];
#pragma GCC unroll 4
  for (int v = 0; v < V; ++v) {
    const __m512 first =
        !start ? _mm512_setzero_ps()
               : _mm512_maskz_loadu_ps(v == V - 1 ? last : __mmask16(0xFFFF), start + v * kLanes);
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) acc[r][v] = first;
  }
  for (int64_t p = 0; p < pairs; ++p) {
    const uint32_t* bp = b + p * ldb;
    __m512bh bv[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) bv[v] = (__m512bh)_mm512_loadu_si512(bp + v * kLanes);
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      const uint32_t pair = A_CONTIGUOUS ? a[r * ld + p] : a[p * ld + r];
      const __m512bh av = (__m512bh)_mm512_set1_epi32(int(pair));
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], av, bv[v]);
    }
  }
  store_tile<R, V>(acc, alpha, beta, c, ldc, last);
}

using TileFn = void (*)(int64_t, const uint32_t*, int64_t, const uint32_t*, int64_t, float, float,
                        const float*, float*, int64_t, __mmask16);

template <bool AC, int R>
constexpr TileFn kTilesOfRows[kVectors] = {tile<AC, R, 1>, tile<AC, R, 2>, tile<AC, R, 3>,
                                           tile<AC, R, 4>};
// kTiles<AC>[rows - 1][vectors - 1], the bottom and right edges of C included.
template <bool AC>
constexpr const TileFn* kTiles[kRows] = {kTilesOfRows<AC, 1>, kTilesOfRows<AC, 2>,
                                         kTilesOfRows<AC, 3>, kTilesOfRows<AC, 4>,
                                         kTilesOfRows<AC, 5>, kTilesOfRows<AC, 6>};
template <bool AC>
constexpr TileFn kNarrowTiles[kNarrowRows] = {tile<AC, 1, 1>,  tile<AC, 2, 1>,  tile<AC, 3, 1>,
                                              tile<AC, 4, 1>,  tile<AC, 5, 1>,  tile<AC, 6, 1>,
                                              tile<AC, 7, 1>,  tile<AC, 8, 1>,  tile<AC, 9, 1>,
                                              tile<AC, 10, 1>, tile<AC, 11, 1>, tile<AC, 12, 1>};

template <bool AC>
void rows(const Bf16Operands& ops, int64_t i0, int64_t i1, int64_t n, int64_t p0, int64_t p1,
          float alpha, float beta, const float* start, float* c, int64_t ldc) {
  const int64_t ld = AC ? ops.a_row : ops.a_pair, width = ops.panel_cols, pairs = p1 - p0;
  const int64_t panels = (n + width - 1) / width;
  const uint32_t* a = ops.a + p0 * (AC ? 1 : ops.a_pair);
  auto a_rows = [&](int64_t i) { return a + i * (AC ? ops.a_row : 1); };
  if (n <= kLanes) {
    const __mmask16 last = __mmask16((1u << n) - 1);
    for (int64_t i = i0; i < i1; i += kNarrowRows) {
      const int r = int(std::min<int64_t>(kNarrowRows, i1 - i));
      kNarrowTiles<AC>[r - 1](pairs, a_rows(i), ld, ops.panel(0, p0), ops.panel_ld(), alpha, beta,
                              start, c + i * ldc, ldc, last);
    }
    return;
  }
  for (int64_t ib = i0; ib < i1; ib += kBlockRows) {
    const int64_t ie = std::min(i1, ib + kBlockRows);
    for (int64_t q = 0; q < panels; ++q) {
      const int64_t j = q * width, cols = std::min(width, n - j);
      const int vectors = int((cols + kLanes - 1) / kLanes);
      const __mmask16 last = __mmask16((1u << (cols - (vectors - 1) * kLanes)) - 1);
      const uint32_t* panel = ops.panel(q, p0);
      for (int64_t i = ib; i < ie; i += kRows) {
        const int r = int(std::min<int64_t>(kRows, ie - i));
        kTiles<AC>[r - 1][vectors - 1](pairs, a_rows(i), ld, panel, ops.panel_ld(), alpha, beta,
                                       start ? start + j : nullptr, c + i * ldc + j, ldc, last);
      }
    }
  }
}

}  // namespace

void bf16_rows_avx512(const Bf16Operands& ops, int64_t i0, int64_t i1, int64_t n, int64_t p0,
                      int64_t p1, float alpha, float beta, const float* start, float* c,
                      int64_t ldc) {
  if (ops.a_pair == 1)
    rows<true>(ops, i0, i1, n, p0, p1, alpha, beta, start, c, ldc);
  else
    rows<false>(ops, i0, i1, n, p0, p1, alpha, beta, start, c, ldc);
}

}  // namespace vg::detail
