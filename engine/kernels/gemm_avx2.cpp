// The AVX2 tiles of vitgrad's own float products (engine/kernels/gemm_tiled.h lays the
// products out), for CPUs without AVX-512: 6 rows by 16 columns of C in 12 ymm registers, and
// for a small product with B transposed and a C at most 56 columns wide (an attention head's
// scores), 2 rows across the whole of C in 14.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <utility>

#include "engine/kernels/gemm_simd.h"
#include "engine/kernels/gemm_tiled.h"
#include "engine/kernels/gemm_tiled_made.h"
#include "engine/kernels/prefetch_tile.h"

namespace vg::detail {
namespace {

// The lanes below `tail` (1 to 8), as AVX2's masked loads and stores take them.
__attribute__((target("avx2,fma"))) inline __m256i lanes_below(int tail) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(tail), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// 12 accumulators and the two vectors of op(B)'s row take 14 of the 16 ymm registers (the
// broadcast reads A from memory into the 15th).
struct Avx2Tiles {
  static constexpr int kRows = 6, kVectors = 2, kLanes = 8, kNarrowRows = 12;
  static constexpr int64_t kBlockTiles = 8;
  // A tiled::TileFn of R rows and V vectors (tiled::TileFn says what it computes): the same
  // fma chains as the AVX-512 tiles, 8 lanes at a time.
  template <bool TA, int R, int V>
  static void multiply(int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                       float alpha, float beta, const float* start, float* c, int64_t ldc,
                       int tail);
  // Out row p = column p of an 8 x 8 block of `in`: `rows` rows exist (the others count as
  // zero), `cols` columns are read, 8 values written per out row.
  static void transpose(const float* in, int64_t ld, int rows, int cols, float* out, int64_t ldo);
};

// Three rounds of shuffles in registers, where a loop would take a load and a store per
// element: pairs of rows element by element, then pairs of pairs, then the 128-bit halves.
// Moves bits only. Its plain reference is the products' own: tests/engine/gemm_tiles_test.cpp
// holds every product with a transposed B (blocks cut at 2, 4 and 5 rows and at 4 columns) to
// a plain loop over the untransposed operand, bit for bit.
__attribute__((target("avx2,fma"))) void Avx2Tiles::transpose(const float* in, int64_t ld,
                                                              int rows, int cols, float* out,
                                                              int64_t ldo) {
  const __m256i read = lanes_below(cols);
  __m256 r[8], t[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i)
    r[i] = i < rows ? _mm256_maskload_ps(in + i * ld, read) : _mm256_setzero_ps();
#pragma GCC unroll 8
  for (int i = 0; i < 8; i += 2) {  // t[i] holds columns 0, 1, 4, 5 of rows i and i + 1
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
#pragma GCC unroll 8
  for (int i = 0; i < 8; i += 4)  // r[i + c]: column c of four rows, then column c + 4
#pragma GCC unroll 8
    for (int h = 0; h < 2; ++h) {
      r[i + 2 * h] = _mm256_shuffle_ps(t[i + h], t[i + h + 2], 0x44);
      r[i + 2 * h + 1] = _mm256_shuffle_ps(t[i + h], t[i + h + 2], 0xee);
    }
#pragma GCC unroll 8
  for (int c = 0; c < 4; ++c) {  // the halves of the block: whole columns
    if (c < cols) _mm256_storeu_ps(out + c * ldo, _mm256_permute2f128_ps(r[c], r[c + 4], 0x20));
    if (c + 4 < cols)
      _mm256_storeu_ps(out + (c + 4) * ldo, _mm256_permute2f128_ps(r[c], r[c + 4], 0x31));
  }
}

template <bool TA, int R, int V>
__attribute__((target("avx2,fma"))) void Avx2Tiles::multiply(int64_t k, const float* a, int64_t lda,
                                                             const float* b, int64_t ldb,
                                                             float alpha, float beta,
                                                             const float* start, float* c,
                                                             int64_t ldc, int tail) {
  const __m256i last = lanes_below(tail);
  const bool cut = tail < kLanes;
  if (beta == 0.0f) prefetch_tile_for_write<R>(c, ldc, (V - 1) * kLanes + tail);
  __m256 acc[R][V];
#pragma GCC unroll 2
  for (int v = 0; v < V; ++v) {
    const __m256 first = !start              ? _mm256_setzero_ps()
                         : v == V - 1 && cut ? _mm256_maskload_ps(start + v * kLanes, last)
                                             : _mm256_loadu_ps(start + v * kLanes);
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) acc[r][v] = first;
  }
  for (int64_t p = 0; p < k; ++p) {
    const float* bp = b + p * ldb;
    __m256 bv[V];
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v)
      bv[v] = v == V - 1 && cut ? _mm256_maskload_ps(bp + v * kLanes, last)
                                : _mm256_loadu_ps(bp + v * kLanes);
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      const __m256 av = _mm256_broadcast_ss(TA ? a + p * lda + r : a + r * lda + p);
#pragma GCC unroll 2
      for (int v = 0; v < V; ++v) acc[r][v] = _mm256_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
  const __m256 alpha_v = _mm256_set1_ps(alpha), beta_v = _mm256_set1_ps(beta);
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < V; ++v) {
      float* cp = c + r * ldc + v * kLanes;
      const bool masked = v == V - 1 && cut;
      __m256 out = alpha == 1.0f ? acc[r][v] : _mm256_mul_ps(alpha_v, acc[r][v]);
      if (beta != 0.0f) {  // beta = 0: C is not read (BLAS semantics: NaN there is dropped)
        const __m256 old = masked ? _mm256_maskload_ps(cp, last) : _mm256_loadu_ps(cp);
        out = beta == 1.0f ? _mm256_add_ps(out, old) : _mm256_fmadd_ps(beta_v, old, out);
      }
      if (masked)
        _mm256_maskstore_ps(cp, last, out);
      else
        _mm256_storeu_ps(cp, out);
    }
}

// C (R rows x V vectors, the last cut to `tail` columns) = alpha * A B, B's rows ldb apart:
// a tile across the whole of a narrow C, with B's vectors read from L1 by the fmas (14
// accumulators leave no registers to hold them). Each element is the fma chain of multiply's.
template <int R, int V>
__attribute__((target("avx2,fma"))) void across_c(int64_t k, const float* a, int64_t lda,
                                                  const float* b, int64_t ldb, float alpha,
                                                  float* c, int64_t ldc, int tail) {
  constexpr int kLanes = Avx2Tiles::kLanes;
  __m256 acc[R][V];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) acc[r][v] = _mm256_setzero_ps();
  for (int64_t p = 0; p < k; ++p) {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + r * lda + p);
#pragma GCC unroll 8
      for (int v = 0; v < V; ++v)
        acc[r][v] = _mm256_fmadd_ps(av, _mm256_loadu_ps(b + p * ldb + v * kLanes), acc[r][v]);
    }
  }
  const __m256i last = lanes_below(tail);
  const __m256 alpha_v = _mm256_set1_ps(alpha);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < V; ++v) {
      const __m256 out = alpha == 1.0f ? acc[r][v] : _mm256_mul_ps(alpha_v, acc[r][v]);
      if (v == V - 1 && tail < kLanes)
        _mm256_maskstore_ps(c + r * ldc + v * kLanes, last, out);
      else
        _mm256_storeu_ps(c + r * ldc + v * kLanes, out);
    }
}

using AcrossFn = void (*)(int64_t, const float*, int64_t, const float*, int64_t, float, float*,
                          int64_t, int);
template <int R, size_t... V>
constexpr std::array<AcrossFn, sizeof...(V)> across_widths(std::index_sequence<V...>) {
  return {&across_c<R, int(V) + 1>...};
}

// Seven vectors: 14 accumulators for a pair of rows.
constexpr int64_t kAcrossVectors = 7, kAcrossCols = kAcrossVectors * Avx2Tiles::kLanes;

// C = alpha A B^T where C is at most seven vectors wide and k one chain (an attention head's
// S = s Q K^T and dP = dO V^T: 50 x 50 x 16 at dim 64), B^T written once as rows of C's width
// and each pair of C's rows one tile across all of it. The 6 x 16 tiles cover such a C in 36
// calls of 16 terms each, as long to start and store as to run, the last of each row of tiles
// on two columns; here it is 25 calls, and a head's S at dim 64 takes 2.6 us instead of 4.0
// (one core of an AMD EPYC of family 25 model 1, its rows in L2). Each element is the tiles'
// fma chain, so C has their bits.
__attribute__((target("avx2,fma"))) void across_c_product(int64_t m, int64_t n, int64_t k,
                                                          float alpha, const float* a, int64_t lda,
                                                          const float* b, int64_t ldb, float* c,
                                                          int64_t ldc) {
  constexpr int kLanes = Avx2Tiles::kLanes;
  static constexpr auto pairs = across_widths<2>(std::make_index_sequence<kAcrossVectors>());
  static constexpr auto singles = across_widths<1>(std::make_index_sequence<kAcrossVectors>());
  const int64_t width = (n + kLanes - 1) / kLanes * kLanes;
  thread_local kernels::CacheLineVector<float> bt;  // grown once per shape, then reused
  kernels::grow(bt, k * width);
  for (int64_t j = 0; j < n; j += kLanes)
    for (int64_t p = 0; p < k; p += kLanes)
      Avx2Tiles::transpose(b + j * ldb + p, ldb, int(std::min<int64_t>(kLanes, n - j)),
                           int(std::min<int64_t>(kLanes, k - p)), bt.data() + p * width + j, width);
  const int vectors = int(width / kLanes), tail = int(n - width + kLanes);
  int64_t i = 0;
  for (; i + 2 <= m; i += 2)
    pairs[vectors - 1](k, a + i * lda, lda, bt.data(), width, alpha, c + i * ldc, ldc, tail);
  if (i < m)
    singles[vectors - 1](k, a + i * lda, lda, bt.data(), width, alpha, c + i * ldc, ldc, tail);
}

// The small products: across_c_product where it takes the shape, else the tiles' own.
void small_product(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                   int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
                   const float* start) {
  if (tb && !ta && n <= kAcrossCols && k <= tiled::kChunk && beta == 0.0f && !start)
    return across_c_product(m, n, k, alpha, a, lda, b, ldb, c, ldc);
  tiled::small_product<Avx2Tiles>(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, start);
}

}  // namespace

const TiledProducts& avx2_products() {
  static constexpr TiledProducts products{&tiled::product<Avx2Tiles>,
                                          &tiled::product_tn_sums<Avx2Tiles>,
                                          &small_product,
                                          &tiled::makes_rows<Avx2Tiles>,
                                          &tiled::product_made_a<Avx2Tiles>,
                                          &tiled::transposed_a_product_made_b<Avx2Tiles>,
                                          &tiled::product_then<Avx2Tiles>};
  return products;
}

}  // namespace vg::detail
