#include "engine/kernels/bf16_gemm.h"

#include <algorithm>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/parallel.h"
#include "engine/kernels/bf16.h"
#include "engine/kernels/bf16_gemm_parts.h"
#include "engine/kernels/matmul_precision.h"

namespace vg {
namespace {

// A chain covers at most this many pairs (512 terms of k) before its sums are added to C:
// the pairs of B for one panel (256 x 64 words, 64 KB) stay in L2 while the rows sweep it.
constexpr int64_t kChunkPairs = 256;
constexpr int64_t kMaxPanelCols = 64, kLanes = 16;

// Row i of op(A) as pairs into out[i * pairs ..]: op(A) not transposed, rows lda apart.
void pack_rows_of_a(int64_t m, int64_t k, const float* a, int64_t lda, uint32_t* out) {
  const int64_t pairs = (k + 1) / 2;
  parallel_for(m, std::max<int64_t>(1, 16384 / pairs), [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) detail::bf16_pairs_of_row(a + i * lda, k, out + i * pairs);
  });
}

// Pair p of `count` columns: out[p * count + i] = (x[2p * ld + i], x[(2p + 1) * ld + i]), two
// consecutive rows of a row-major x interleaved (A transposed, or B not transposed).
void interleave_rows(int64_t k, int64_t count, const float* x, int64_t ld, uint32_t* out,
                     int64_t out_ld) {
  const int64_t pairs = (k + 1) / 2;
  parallel_for(pairs, std::max<int64_t>(1, 16384 / count), [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const float* first = x + 2 * p * ld;
      detail::bf16_pairs_of_rows(first, 2 * p + 1 < k ? first + ld : nullptr, count,
                                 out + p * out_ld);
    }
  });
}

// op(B) (k x n) as panels of `width` columns (see Bf16Operands), the padding zero.
void pack_b(bool tb, int64_t k, int64_t n, const float* b, int64_t ldb, int64_t width,
            uint32_t* out) {
  const int64_t pairs = (k + 1) / 2, panels = (n + width - 1) / width;
  for (int64_t q = 0; q < panels; ++q) {
    const int64_t j0 = q * width, cols = std::min(width, n - j0);
    uint32_t* panel = out + q * pairs * width;
    if (!tb) {
      interleave_rows(k, cols, b + j0, ldb, panel, width);
    } else {  // column j of op(B) is row j of B: its pairs are contiguous there
      parallel_for(cols, 4, [&](int64_t c0, int64_t c1) {
        thread_local std::vector<uint32_t> row_pairs;
        row_pairs.resize(pairs);
        for (int64_t j = c0; j < c1; ++j) {
          detail::bf16_pairs_of_row(b + (j0 + j) * ldb, k, row_pairs.data());
          for (int64_t p = 0; p < pairs; ++p) panel[p * width + j] = row_pairs[p];
        }
      });
    }
    if (cols < width)
      for (int64_t p = 0; p < pairs; ++p) std::fill(panel + p * width + cols, panel + (p + 1) * width, 0u);
  }
}

}  // namespace

void gemm_bf16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
               int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
               const float* start) {
  if (m <= 0 || n <= 0) return;
  check(bf16_hardware() != Bf16Hardware::none,
        "gemm_bf16: this CPU has no AVX512-BF16 (product ", m, "x", n, "x", k, ")");
  if (start) beta = 0.0f;
  if (k <= 0) {  // an empty sum: C = alpha * start, or beta * C
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        c[i * ldc + j] = start ? alpha * start[j] : beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
    return;
  }
  // Grown once per shape, then reused; a worker thread reads the caller's.
  thread_local std::vector<uint32_t> a_words, b_words;
  detail::Bf16Operands ops;
  ops.pairs = (k + 1) / 2;
  ops.panel_cols = std::min(kMaxPanelCols, (n + kLanes - 1) / kLanes * kLanes);
  const int64_t panels = (n + ops.panel_cols - 1) / ops.panel_cols;
  if (a_words.size() < size_t(m * ops.pairs)) a_words.resize(m * ops.pairs);
  if (b_words.size() < size_t(panels * ops.pairs * ops.panel_cols))
    b_words.resize(panels * ops.pairs * ops.panel_cols);
  if (ta) {
    interleave_rows(k, m, a, lda, a_words.data(), m);
    ops.a_row = 1, ops.a_pair = m;
  } else {
    pack_rows_of_a(m, k, a, lda, a_words.data());
    ops.a_row = ops.pairs, ops.a_pair = 1;
  }
  pack_b(tb, k, n, b, ldb, ops.panel_cols, b_words.data());
  ops.a = a_words.data();
  ops.b = b_words.data();

  constexpr int64_t kTileRows = 6;
  const int64_t tiles = (m + kTileRows - 1) / kTileRows;
  // Row tiles shared among threads, each part at least ~2^18 multiply-adds.
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 18) / (kTileRows * n * k));
  parallel_for(tiles, grain, [&](int64_t t0, int64_t t1) {
    const int64_t i0 = t0 * kTileRows, i1 = std::min(m, t1 * kTileRows);
    for (int64_t p = 0; p < ops.pairs; p += kChunkPairs)
      detail::bf16_rows_avx512(ops, i0, i1, n, p, std::min(ops.pairs, p + kChunkPairs), alpha,
                               p == 0 ? beta : 1.0f, p == 0 ? start : nullptr, c, ldc);
  });
}

void gemm_bf16_reference(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                         const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                         float* c, int64_t ldc, const float* start) {
  auto rounded = [](float x) { return double(from_bf16(to_bf16(x))); };
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = start ? double(start[j]) : 0.0;
      for (int64_t l = 0; l < k; ++l)
        sum += rounded(ta ? a[l * lda + i] : a[i * lda + l]) *
               rounded(tb ? b[j * ldb + l] : b[l * ldb + j]);
      float& out = c[i * ldc + j];
      out = float(alpha * sum + (start || beta == 0.0f ? 0.0 : double(beta) * out));
    }
}

}  // namespace vg
