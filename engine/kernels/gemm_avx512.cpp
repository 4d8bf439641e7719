// The AVX-512 tiles of vitgrad's own float products (engine/kernels/gemm_tiled.h lays the
// products out): 6 rows by 64 columns of C in 24 zmm registers.
#include <immintrin.h>

#include "engine/kernels/gemm_simd.h"
#include "engine/kernels/gemm_tiled.h"
#include "engine/kernels/gemm_tiled_made.h"
#include "engine/kernels/prefetch_tile.h"
#include "engine/kernels/simd_build.h"
#include "engine/kernels/store_tile.h"
#include "engine/kernels/transpose16.h"

VG_AVX512_INTRINSICS_BEGIN

namespace vg::detail {
namespace {

// 24 accumulators, the four vectors of op(B)'s row and one broadcast take 29 of the 32 zmm
// registers; eight row tiles (48 rows of A) stay in L1 while a panel is swept.
struct Avx512Tiles {
  static constexpr int kRows = 6, kVectors = 4, kLanes = 16, kNarrowRows = 12;
  static constexpr int64_t kBlockTiles = 8;
  // A tiled::TileFn of R rows and V vectors (tiled::TileFn says what it computes).
  template <bool TA, int R, int V>
  static void multiply(int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                       float alpha, float beta, const float* start, float* c, int64_t ldc,
                       int tail);
  static void transpose(const float* in, int64_t ld, int rows, int cols, float* out, int64_t ldo) {
    transpose16(in, ld, rows, cols, out, ldo);
  }
};

template <bool TA, int R, int V>
__attribute__((target("avx512f"))) void Avx512Tiles::multiply(int64_t k, const float* a,
                                                              int64_t lda, const float* b,
                                                              int64_t ldb, float alpha, float beta,
                                                              const float* start, float* c,
                                                              int64_t ldc, int tail) {
  const __mmask16 last = __mmask16((1u << tail) - 1);
  if (beta == 0.0f) prefetch_tile_for_write<R>(c, ldc, (V - 1) * kLanes + tail);
  __m512 acc[R][V];
#pragma GCC unroll 4
  for (int v = 0; v < V; ++v) {
    const __m512 first = !start       ? _mm512_setzero_ps()
                         : v == V - 1 ? _mm512_maskz_loadu_ps(last, start + v * kLanes)
                                      : _mm512_loadu_ps(start + v * kLanes);
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) acc[r][v] = first;
  }
  for (int64_t p = 0; p < k; ++p) {
    const float* bp = b + p * ldb;
    __m512 bv[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v)
      bv[v] = v == V - 1 ? _mm512_maskz_loadu_ps(last, bp + v * kLanes)
                         : _mm512_loadu_ps(bp + v * kLanes);
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      const __m512 av = _mm512_set1_ps(TA ? a[p * lda + r] : a[r * lda + p]);
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
  store_tile<R, V>(acc, alpha, beta, c, ldc, last);
}

}  // namespace

const TiledProducts& avx512_products() {
  static constexpr TiledProducts products{
      &tiled::product<Avx512Tiles>,        &tiled::product_tn_sums<Avx512Tiles>,
      &tiled::small_product<Avx512Tiles>,  &tiled::makes_rows<Avx512Tiles>,
      &tiled::product_made_a<Avx512Tiles>, &tiled::transposed_a_product_made_b<Avx512Tiles>,
      &tiled::product_then<Avx512Tiles>};
  return products;
}

}  // namespace vg::detail

VG_AVX512_INTRINSICS_END
