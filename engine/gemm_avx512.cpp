#include "engine/gemm_avx512.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "engine/parallel.h"

namespace vg::detail {
namespace {

// A tile of C is kRows rows by kVectors * 16 columns: 24 accumulators, the four vectors of
// op(B)'s row and one broadcast take 29 of the 32 zmm registers.
constexpr int kRows = 6, kVectors = 4, kLanes = 16, kTileCols = kVectors * kLanes;
// Row tiles handled together against one column panel of op(B), so that their rows of A
// (kBlockTiles * kRows * k floats) stay in L1 while the panel is swept.
constexpr int64_t kBlockTiles = 8;

// The shapes this kernel is used for (measured against OpenBLAS 0.3.21 on Zen 5, both on
// AVX-512): enough rows to amortise the transpose of B, and k short enough that a column
// panel of op(B) (k x 64 floats) stays in L2.
constexpr int64_t kMinRows = 64, kMinCols = 16, kMinK = 8, kMaxK = 1024;
// With A transposed (a weight gradient dY^T X, k = every token of the batch): C has a few
// dozen rows at least, and k is cut into chunks whose panel of B stays in L2; each chunk's
// sums are added to C in order, so the bits depend on the shape alone.
constexpr int64_t kMinRowsTransposed = 16, kMinKTransposed = 256, kChunkTransposed = 256;

bool enabled() {
  static const bool on = [] {
    const char* choice = std::getenv("VITGRAD_GEMM");  // "blas": OpenBLAS for every product
    return __builtin_cpu_supports("avx512f") && !(choice && std::strcmp(choice, "blas") == 0);
  }();
  return on;
}

// C[R x 16V] = alpha * A[R x k] B[k x 16V] + beta * C, the last vector of each row masked to
// `last` (all 16 lanes for a full tile). Every element is one fma chain over k in order,
// started from `start` (16V values, the same for every row) or from zero when it is null.
// With TA, A is stored transposed: row r of the tile, column p is a[p * lda + r].
template <bool TA, int R, int V>
__attribute__((target("avx512f"))) void tile(int64_t k, const float* a, int64_t lda, const float* b,
                                             int64_t ldb, float alpha, float beta,
                                             const float* start, float* c, int64_t ldc,
                                             __mmask16 last) {
  __m512 acc[R][V];
#pragma GCC unroll 4
  for (int v = 0; v < V; ++v) {
    const __m512 first = !start       ? _mm512_setzero_ps()
                         : v == V - 1 ? _mm512_maskz_loadu_ps(last, start + v * kLanes)
                                      : _mm512_loadu_ps(start + v * kLanes);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) acc[r][v] = first;
  }
  for (int64_t p = 0; p < k; ++p) {
    const float* bp = b + p * ldb;
    __m512 bv[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v)
      bv[v] = v == V - 1 ? _mm512_maskz_loadu_ps(last, bp + v * kLanes)
                         : _mm512_loadu_ps(bp + v * kLanes);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m512 av = _mm512_set1_ps(TA ? a[p * lda + r] : a[r * lda + p]);
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
  const __m512 alpha_v = _mm512_set1_ps(alpha), beta_v = _mm512_set1_ps(beta);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      float* cp = c + r * ldc + v * kLanes;
      const __mmask16 mask = v == V - 1 ? last : __mmask16(0xFFFF);
      __m512 out = alpha == 1.0f ? acc[r][v] : _mm512_mul_ps(alpha_v, acc[r][v]);
      if (beta != 0.0f) {  // beta = 0: C is not read (BLAS semantics: NaN there is dropped)
        const __m512 old = _mm512_maskz_loadu_ps(mask, cp);
        out = beta == 1.0f ? _mm512_add_ps(out, old) : _mm512_fmadd_ps(beta_v, old, out);
      }
      _mm512_mask_storeu_ps(cp, mask, out);
    }
}

using TileFn = void (*)(int64_t, const float*, int64_t, const float*, int64_t, float, float,
                        const float*, float*, int64_t, __mmask16);

template <bool TA, int R>
constexpr TileFn tiles_of_rows[kVectors] = {tile<TA, R, 1>, tile<TA, R, 2>, tile<TA, R, 3>,
                                            tile<TA, R, 4>};

// kTiles<TA>[rows - 1][vectors - 1]: the remainders at the bottom and right edge of C too.
template <bool TA>
constexpr const TileFn* kTiles[kRows] = {tiles_of_rows<TA, 1>, tiles_of_rows<TA, 2>,
                                         tiles_of_rows<TA, 3>, tiles_of_rows<TA, 4>,
                                         tiles_of_rows<TA, 5>, tiles_of_rows<TA, 6>};

// Rows [i0, i1) of C against op(B) = b (k x n, row-major with ldb).
template <bool TA>
void rows_of_c(int64_t i0, int64_t i1, int64_t n, int64_t k, float alpha, const float* a,
               int64_t lda, const float* b, int64_t ldb, float beta, const float* start, float* c,
               int64_t ldc) {
  const int64_t block_rows = kBlockTiles * kRows;
  for (int64_t ib = i0; ib < i1; ib += block_rows) {
    const int64_t ie = std::min(i1, ib + block_rows);
    for (int64_t j = 0; j < n; j += kTileCols) {
      const int64_t cols = std::min<int64_t>(kTileCols, n - j);
      const int vectors = int((cols + kLanes - 1) / kLanes);
      const int tail = int(cols - (vectors - 1) * kLanes);
      const __mmask16 last = __mmask16((1u << tail) - 1);
      for (int64_t i = ib; i < ie; i += kRows) {
        const int rows = int(std::min<int64_t>(kRows, ie - i));
        kTiles<TA>[rows - 1][vectors - 1](k, TA ? a + i : a + i * lda, lda, b + j, ldb, alpha, beta,
                                          start ? start + j : nullptr, c + i * ldc + j, ldc, last);
      }
    }
  }
}

}  // namespace

bool gemm_avx512(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                 int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
                 const float* start) {
  if (ta) {  // C = A^T B, k long: row tiles among threads, k in chunks, B read in place
    if (tb || start || m < kMinRowsTransposed || n < kMinCols || k < kMinKTransposed || !enabled())
      return false;
    parallel_for((m + kRows - 1) / kRows, 1, [&](int64_t t0, int64_t t1) {
      for (int64_t p = 0; p < k; p += kChunkTransposed)
        rows_of_c<true>(t0 * kRows, std::min(m, t1 * kRows), n, std::min(kChunkTransposed, k - p),
                        alpha, a + p * lda, lda, b + p * ldb, ldb, p == 0 ? beta : 1.0f, nullptr, c,
                        ldc);
    });
    return true;
  }
  if (m < kMinRows || n < kMinCols || k < kMinK || k > kMaxK || !enabled()) return false;
  if (tb) {  // op(B) = B^T: transposed once into k x n, then read like any other B
    thread_local std::vector<float> transposed;  // grown once per shape, then reused
    if (transposed.size() < size_t(k * n)) transposed.resize(k * n);
    float* t = transposed.data();
    for (int64_t j = 0; j < n; ++j)
      for (int64_t p = 0; p < k; ++p) t[p * n + j] = b[j * ldb + p];
    b = t;
    ldb = n;
  }
  // Row tiles shared among threads, each part at least ~2^17 multiply-adds.
  const int64_t tiles = (m + kRows - 1) / kRows;
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 17) / (kRows * n * k));
  parallel_for(tiles, grain, [&](int64_t t0, int64_t t1) {
    rows_of_c<false>(t0 * kRows, std::min(m, t1 * kRows), n, k, alpha, a, lda, b, ldb, beta, start,
                     c, ldc);
  });
  return true;
}

}  // namespace vg::detail
