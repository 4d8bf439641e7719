#include "engine/kernels/gemm_avx512.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "engine/core/parallel.h"
#include "engine/kernels/axis_sums.h"
#include "engine/kernels/cache_line_vector.h"
#include "engine/kernels/transpose16.h"

// GCC 12 inlines the plain (unmasked) shuffles as masked ones with an undefined pass-through
// vector, and then warns that it may be used uninitialised; it is never read.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace vg::detail {
namespace {

// A tile of C is kRows rows by kVectors * 16 columns: 24 accumulators, the four vectors of
// op(B)'s row and one broadcast take 29 of the 32 zmm registers.
constexpr int kRows = 6, kVectors = 4, kLanes = 16, kTileCols = kVectors * kLanes;
// Row tiles handled together against one column panel of op(B), so that their rows of A
// (kBlockTiles * kRows * k floats) stay in L1 while the panel is swept.
constexpr int64_t kBlockTiles = 8;

// The shapes this kernel is used for (measured against OpenBLAS 0.3.21 on Zen 5, both on
// AVX-512): enough rows to amortise packing op(B), and k short enough that a panel of it
// (k x 64 floats) stays in L2.
constexpr int64_t kMinRows = 64, kMinCols = 16, kMinK = 8, kMaxK = 768;
// With A transposed (a weight gradient dY^T X, k = every token of the batch): C has a few
// dozen rows at least, and k is cut into chunks whose panel of B stays in L2; each chunk's
// sums are added to C in order, so the bits depend on the shape alone.
constexpr int64_t kMinRowsTransposed = 16, kMinKTransposed = 256, kChunkTransposed = 256;
// One fma chain over many hundred terms is less accurate than OpenBLAS, which blocks k; so a
// chain covers at most kChunk terms, and each chunk's sums are added to C in order.
constexpr int64_t kChunk = 256;

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
  const __m512 alpha_v = _mm512_set1_ps(alpha), beta_v = _mm512_set1_ps(beta);
#pragma GCC unroll 12
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

// For a C at most 16 wide (one vector across), a tile of kRows rows has only six fma chains,
// too few to cover the fma's latency, and one broadcast per fma; these tiles take up to 12
// rows, enough chains to keep both fma pipes busy.
constexpr int kNarrowRows = 12;
template <bool TA>
constexpr TileFn kNarrowTiles[kNarrowRows] = {tile<TA, 1, 1>,  tile<TA, 2, 1>,  tile<TA, 3, 1>,
                                              tile<TA, 4, 1>,  tile<TA, 5, 1>,  tile<TA, 6, 1>,
                                              tile<TA, 7, 1>,  tile<TA, 8, 1>,  tile<TA, 9, 1>,
                                              tile<TA, 10, 1>, tile<TA, 11, 1>, tile<TA, 12, 1>};

// op(B) (k x n) as panels of 64 columns, each k x 64 and contiguous (the last one padded
// with zeros). Read in place, B's rows lie ldb floats apart, and at ldb = 256 or more the
// rows of one panel fall into a few cache sets and evict each other; a B at most 64 wide
// and not transposed is its own single panel and is read in place, and so is any B that is
// not transposed when the caller asks (a short k, where those evictions cost little).
class PackedB {
 public:
  // Rows [p0, p0 + k) of op(B), panels [q0, q1), where op(B)[p][j] is b[j * ldb + p] when tb,
  // else b[p * ldb + j]. Shared among the engine's threads unless called inside a parallel
  // region.
  void pack(bool tb, int64_t p0, int64_t k, int64_t n, const float* b, int64_t ldb, int64_t q0 = 0,
            int64_t q1 = -1, bool any_stride_in_place = false) {
    const int64_t panels = (n + kTileCols - 1) / kTileCols;
    if (q1 < 0) q1 = panels;
    k_ = k;
    if (!tb && (ldb <= kTileCols || any_stride_in_place)) {
      in_place_ = b + p0 * ldb;
      stride_ = ldb;
      return;
    }
    in_place_ = nullptr;
    stride_ = kTileCols;
    if (data_.size() < size_t(panels * k * kTileCols)) data_.resize(panels * k * kTileCols);
    if (tb) {  // blocks of 16 x 16, transposed in registers
      const int64_t blocks = (k + kLanes - 1) / kLanes;
      parallel_for((q1 - q0) * blocks, 16, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t q = q0 + r / blocks, p = (r % blocks) * kLanes;
          const int64_t j0 = q * kTileCols, cols = std::min<int64_t>(kTileCols, n - j0);
          const int depth = int(std::min<int64_t>(kLanes, k - p));
          float* to = data_.data() + (q * k + p) * kTileCols;
          int64_t j = 0;
          for (; j < cols; j += kLanes)
            transpose16(b + (j0 + j) * ldb + p0 + p, ldb, int(std::min<int64_t>(kLanes, cols - j)),
                        depth, to + j, kTileCols);
          for (int d = 0; d < depth; ++d)
            std::fill(to + d * kTileCols + j, to + (d + 1) * kTileCols, 0.0f);
        }
      });
      return;
    }
    parallel_for((q1 - q0) * k, 256, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t q = q0 + r / k, p = r % k;
        const int64_t j0 = q * kTileCols, cols = std::min<int64_t>(kTileCols, n - j0);
        float* to = data_.data() + (q * k + p) * kTileCols;
        std::copy_n(b + (p0 + p) * ldb + j0, cols, to);
        std::fill(to + cols, to + kTileCols, 0.0f);
      }
    });
  }
  const float* panel(int64_t q) const {
    return in_place_ ? in_place_ + q * kTileCols : data_.data() + q * k_ * kTileCols;
  }
  int64_t stride() const { return stride_; }

 private:
  kernels::CacheLineVector<float> data_;  // grown once per shape, then reused
  const float* in_place_ = nullptr;
  int64_t k_ = 0, stride_ = 0;
};

struct NoBlockHook {
  void operator()(int64_t, int64_t) const {}
};

// Rows [i0, i1) and panels [q0, q1) of C against rows [p0, p0 + k) of the packed op(B), and
// after_block(ib, ie) once a block of rows is done, while its rows of A are in cache.
template <bool TA, class AfterBlock = NoBlockHook>
void part_of_c(int64_t i0, int64_t i1, int64_t q0, int64_t q1, int64_t n, int64_t k, float alpha,
               const float* a, int64_t lda, const PackedB& b, int64_t p0, float beta,
               const float* start, float* c, int64_t ldc, AfterBlock after_block = {}) {
  const int64_t block_rows = kBlockTiles * kRows;
  for (int64_t ib = i0; ib < i1; ib += block_rows) {
    const int64_t ie = std::min(i1, ib + block_rows);
    for (int64_t q = q0; q < q1; ++q) {
      const int64_t j = q * kTileCols, cols = std::min<int64_t>(kTileCols, n - j);
      const int vectors = int((cols + kLanes - 1) / kLanes);
      const int tail = int(cols - (vectors - 1) * kLanes);
      const __mmask16 last = __mmask16((1u << tail) - 1);
      for (int64_t i = ib; i < ie; i += kRows) {
        const int rows = int(std::min<int64_t>(kRows, ie - i));
        kTiles<TA>[rows - 1][vectors - 1](k, TA ? a + i : a + i * lda, lda,
                                          b.panel(q) + p0 * b.stride(), b.stride(), alpha, beta,
                                          start ? start + j : nullptr, c + i * ldc + j, ldc, last);
      }
    }
    after_block(ib, ie);
  }
}

// The sums of one operand's columns, taken chunk by chunk of k right after the chunk's
// products have read it (from cache): a weight gradient's bias gradient, the columns of dY.
// In double, one row of `width` per kColumnSumRows rows of k (zero on entry), each column in
// row order: kernels::sum_middle_axis's chunks and order.
struct ColumnSums {
  bool of_b = false;  // dY is B where C^T = B^T A is computed instead
  int64_t width = 0;
  double* parts = nullptr;
  // Rows [r0, r1) of columns [i0, i1) of x (rows ld apart).
  void add(const float* x, int64_t ld, int64_t r0, int64_t r1, int64_t i0, int64_t i1) const {
    for (int64_t r = r0; r < r1; ++r) {
      double* row = parts + r / kernels::kColumnSumRows * width;
      for (int64_t i = i0; i < i1; ++i) row[i] += double(x[r * ld + i]);
    }
  }
};

// C = alpha A^T B + beta C, k long: k in chunks, each chunk's sums added to C in order. The
// threads share C's panels of columns (each packs only its own panels of B) where they split
// evenly, else its rows (each packs every panel, a small cost next to the products). With
// `sums`, the thread that alone reads those columns of dY sums them (the first, where all do).
void gemm_transposed_a(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                       const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
                       const ColumnSums* sums) {
  static_assert(kernels::kColumnSumRows % kChunkTransposed == 0, "a chunk of k in one sum");
  const int64_t panels = (n + kTileCols - 1) / kTileCols, tiles = (m + kRows - 1) / kRows;
  const bool by_panels = panels % 2 == 0 || panels >= 8;  // three panels would split 2 : 1
  parallel_for(by_panels ? panels : tiles, 1, [&](int64_t t0, int64_t t1) {
    const int64_t i0 = by_panels ? 0 : t0 * kRows, i1 = by_panels ? m : std::min(m, t1 * kRows);
    const int64_t q0 = by_panels ? t0 : 0, q1 = by_panels ? t1 : panels;
    const bool summing = sums && ((sums->of_b == by_panels) || t0 == 0);
    thread_local PackedB chunk;
    for (int64_t p = 0; p < k; p += kChunkTransposed) {
      const int64_t rows = std::min(kChunkTransposed, k - p);
      chunk.pack(false, p, rows, n, b, ldb, q0, q1);
      // dY as A: each block of its columns summed as soon as the block's products are done.
      auto sum_block = [&](int64_t ib, int64_t ie) {
        if (summing && !sums->of_b) sums->add(a, lda, p, p + rows, ib, ie);
      };
      part_of_c<true>(i0, i1, q0, q1, n, rows, alpha, a + p * lda, lda, chunk, 0,
                      p == 0 ? beta : 1.0f, nullptr, c, ldc, sum_block);
      if (summing && sums->of_b)
        sums->add(b, ldb, p, p + rows, q0 * kTileCols, std::min(n, q1 * kTileCols));
    }
  });
}

// gemm_avx512's case of A transposed, with the sums of A's columns where `sums` is given.
bool transposed_a_product(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                          const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
                          double* sums_parts) {
  if (m < kMinRowsTransposed || n < kMinCols || k < kMinKTransposed || !enabled()) return false;
  if (beta == 0.0f && ldb > kTileCols && lda < ldb && n >= kMinRowsTransposed && m >= kMinCols) {
    // B would be packed, chunk by chunk, and A is narrow enough to be read in place: C^T =
    // B^T A packs nothing. Each element is the same fma chain (the products commute), so C
    // gets the same bits; e.g. fc2's weight gradient, (64 x 6400) times (6400 x 256).
    thread_local kernels::CacheLineVector<float> c_transposed;  // grown once per shape, then reused
    if (c_transposed.size() < size_t(n * m)) c_transposed.resize(n * m);
    const ColumnSums sums{true, m, sums_parts};
    gemm_transposed_a(n, m, k, alpha, b, ldb, a, lda, 0.0f, c_transposed.data(), m,
                      sums_parts ? &sums : nullptr);
    const float* ct = c_transposed.data();
    parallel_for(m, std::max<int64_t>(1, 16384 / n), [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i)
        for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = ct[j * m + i];
    });
    return true;
  }
  const ColumnSums sums{false, m, sums_parts};
  gemm_transposed_a(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, sums_parts ? &sums : nullptr);
  return true;
}

}  // namespace

bool gemm_avx512(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                 int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
                 const float* start) {
  if (ta)
    return !tb && !start &&
           transposed_a_product(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nullptr);
  if (m < kMinRows || n < kMinCols || k < kMinK || k > kMaxK || !enabled()) return false;
  thread_local PackedB packed_here;
  packed_here.pack(tb, 0, k, n, b, ldb);
  // Named inside the lambda, a thread_local is each thread's own: the workers need this one.
  const PackedB& packed = packed_here;
  const int64_t panels = (n + kTileCols - 1) / kTileCols, tiles = (m + kRows - 1) / kRows;
  // Row tiles shared among threads, each part at least ~2^17 multiply-adds.
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 17) / (kRows * n * k));
  parallel_for(tiles, grain, [&](int64_t t0, int64_t t1) {
    for (int64_t p = 0; p < k; p += kChunk)  // see kChunk
      part_of_c<false>(t0 * kRows, std::min(m, t1 * kRows), 0, panels, n, std::min(kChunk, k - p),
                       alpha, a + p, lda, packed, p, p == 0 ? beta : 1.0f, p == 0 ? start : nullptr,
                       c, ldc);
  });
  return true;
}

bool gemm_avx512_tn_sums(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c,
                         float* sums) {
  const int64_t chunks = (k + kernels::kColumnSumRows - 1) / kernels::kColumnSumRows;
  thread_local std::vector<double> parts;  // the caller's, shared by the workers
  parts.assign(chunks * m, 0.0);
  if (!transposed_a_product(m, n, k, 1.0f, a, m, b, n, 0.0f, c, n, parts.data())) return false;
  kernels::add_column_chunks(parts.data(), chunks, m, sums);
  return true;
}

void small_product_avx512(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                          const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                          float* c, int64_t ldc, const float* start) {
  thread_local PackedB packed_here;
  const PackedB& packed = packed_here;
  const int64_t panels = (n + kTileCols - 1) / kTileCols;
  for (int64_t p = 0; p < k; p += kChunk) {  // see kChunk
    const int64_t depth = std::min(kChunk, k - p);
    const float beta_here = p == 0 ? beta : 1.0f;
    const float* start_here = p == 0 ? start : nullptr;
    packed_here.pack(tb, p, depth, n, b, ldb, 0, panels, true);
    if (n <= kLanes) {
      const __mmask16 last = __mmask16((1u << n) - 1);
      for (int64_t i = 0; i < m; i += kNarrowRows) {
        const int rows = int(std::min<int64_t>(kNarrowRows, m - i));
        (ta ? kNarrowTiles<true> : kNarrowTiles<false>)[rows - 1](
            depth, ta ? a + p * lda + i : a + i * lda + p, lda, packed.panel(0), packed.stride(),
            alpha, beta_here, start_here, c + i * ldc, ldc, last);
      }
    } else if (ta)
      part_of_c<true>(0, m, 0, panels, n, depth, alpha, a + p * lda, lda, packed, 0, beta_here,
                      start_here, c, ldc);
    else
      part_of_c<false>(0, m, 0, panels, n, depth, alpha, a + p, lda, packed, 0, beta_here,
                       start_here, c, ldc);
  }
}

bool gemm_avx512_small(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                       const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                       float* c, int64_t ldc) {
  if ((ta && tb) || m <= 0 || n <= 0 || k <= 0 || !enabled()) return false;
  small_product_avx512(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nullptr);
  return true;
}

}  // namespace vg::detail
