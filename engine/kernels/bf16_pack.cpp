// Packing float operands as the bf16 tile loops read them (engine/kernels/bf16_gemm_parts.h):
// rows as pairs of consecutive k terms, two rows interleaved into pairs, and B as panels.
// Internal to engine/kernels/bf16_gemm.cpp.
#include <algorithm>
#include <vector>

#include "engine/core/parallel.h"
#include "engine/kernels/bf16_gemm_parts.h"
#include "engine/kernels/scratch.h"

namespace vg::detail {

// The pairs of `rows` rows of k floats, ld apart, into out, out_ld words a row (at least
// (k + 1) / 2; the words between are zero). Rows that lie end to end with an even k are one
// long row, and short rows (an attention head's 16 terms) one loop: per-row calls are most of
// the cost when k is small.
void pairs_of_rows(int64_t rows, int64_t k, const float* x, int64_t ld, uint32_t* out,
                   int64_t out_ld) {
  const int64_t pairs = (k + 1) / 2;
  if (ld == k && k % 2 == 0 && out_ld == pairs) return bf16_pairs_of_row(x, rows * k, out);
  if (k <= 32) {
    bf16_pairs_of_short_rows(x, ld, rows, k, out, out_ld);
  } else {
    for (int64_t i = 0; i < rows; ++i) bf16_pairs_of_row(x + i * ld, k, out + i * out_ld);
  }
  if (out_ld > pairs)
    for (int64_t i = 0; i < rows; ++i)
      std::fill(out + i * out_ld + pairs, out + (i + 1) * out_ld, 0u);
}

// Pair p of `count` columns: out[p * out_ld + i] = (x[2p * ld + i], x[(2p + 1) * ld + i]), two
// consecutive rows of a row-major x interleaved (A transposed, or B not transposed).
void interleave_rows(int64_t k, int64_t count, const float* x, int64_t ld, uint32_t* out,
                     int64_t out_ld) {
  const int64_t pairs = (k + 1) / 2;
  parallel_for(pairs, std::max<int64_t>(1, 16384 / count), [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      const float* first = x + 2 * p * ld;
      bf16_pairs_of_rows(first, 2 * p + 1 < k ? first + ld : nullptr, count, out + p * out_ld);
    }
  });
}

void bf16_pair_row(const float* first, const float* second, int64_t count, int64_t ld,
                   uint32_t* out) {
  bf16_pairs_of_rows(first, second, count, out);
  std::fill(out + count, out + ld, 0u);
}

void pairs_to_rows(const uint32_t* by_pairs, int64_t pairs, int64_t rows, uint32_t* out,
                   int64_t stride, int64_t padded_rows) {
  transpose_words(by_pairs, pairs, rows, rows, out, stride);
  for (int64_t i = 0; i < rows; ++i)
    std::fill(out + i * stride + pairs, out + (i + 1) * stride, 0u);
  std::fill(out + rows * stride, out + padded_rows * stride, 0u);
}

// Asks the caches for rows 2p + 4 and 2p + 5 (two pairs on, where k has them) of a matrix read
// a pair of rows at a time, `count` values of each from `first` (in row 2p). A weight
// gradient's B is read so, a chunk of its rows at a time, and the prefetchers alone left the
// packing waiting on those rows (as interleave_rows_summing's A did).
template <class T>
void ask_for_rows_ahead(const T* first, int64_t ld, int64_t count, int64_t p, int64_t k) {
  if (2 * p + 5 >= k) return;
  constexpr int64_t kLine = 64 / sizeof(T);
  for (int64_t j = 0; j < count; j += kLine) {
    __builtin_prefetch(first + 4 * ld + j);
    __builtin_prefetch(first + 5 * ld + j);
  }
}

// Pair p of B's rows 2p and 2p + 1 into row p of every panel, for B (k x n, not transposed)
// read row after row, in the order it lies in memory: `pack(p, j0, cols, to)` writes the pairs
// of columns [j0, j0 + cols) of rows 2p and 2p + 1 into `to`. (Panel after panel, each pass
// read a strip of two cache lines from every row, which the prefetchers follow poorly: packing
// a chunk of B 768 columns wide took about as long as the tiles' arithmetic on it.)
template <class PackColumns>
void panels_by_row_pairs(int64_t k, int64_t n, int64_t width, int64_t stride, uint32_t* out,
                         PackColumns pack) {
  const int64_t pairs = (k + 1) / 2, panels = (n + width - 1) / width;
  // Split only where each thread gets 2^16 words or more: a layer's weights (576 x 192) stay
  // on the calling thread, as they did when each panel was packed apart.
  const int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(n, 1));
  parallel_for(pairs, grain, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p)
      for (int64_t q = 0; q < panels; ++q)
        pack(p, q * width, std::min(width, n - q * width), out + (q * stride + p) * width);
  });
}

// B's floats, rounded as they are packed.
void panels_of_row_pairs(int64_t k, int64_t n, const float* b, int64_t ldb, int64_t width,
                         int64_t stride, uint32_t* out) {
  panels_by_row_pairs(k, n, width, stride, out,
                      [&](int64_t p, int64_t j0, int64_t cols, uint32_t* to) {
                        const float* first = b + 2 * p * ldb + j0;
                        ask_for_rows_ahead(first, ldb, cols, p, k);
                        bf16_pairs_of_rows(first, 2 * p + 1 < k ? first + ldb : nullptr, cols, to);
                      });
}

// The same for op(B) = B^T (B n x k): column j of op(B) is row j of B, whose pairs are
// contiguous there; a panel's rows are made as pairs, then turned around 16 x 16 at a time.
void panels_of_transposed_rows(int64_t k, int64_t n, const float* b, int64_t ldb, int64_t width,
                               int64_t stride, uint32_t* out) {
  const int64_t pairs = (k + 1) / 2, panels = (n + width - 1) / width;
  const int64_t grain = std::max<int64_t>(4, 4096 / std::max<int64_t>(pairs, 1));  // columns
  for (int64_t q = 0; q < panels; ++q) {
    const int64_t j0 = q * width, cols = std::min(width, n - j0);
    thread_local PackedWords row_pairs;  // the caller's, shared by the workers
    kernels::grow(row_pairs, cols * pairs);
    uint32_t* rows = row_pairs.data();
    uint32_t* panel = out + q * stride * width;
    parallel_for(cols, grain, [&](int64_t c0, int64_t c1) {
      pairs_of_rows(c1 - c0, k, b + (j0 + c0) * ldb, ldb, rows + c0 * pairs, pairs);
      transpose_words(rows + c0 * pairs, c1 - c0, pairs, pairs, panel + c0, width);
    });
  }
}

// The padding of k x n values packed as panels: columns past n, pair rows past k, zero.
void zero_panel_padding(int64_t k, int64_t n, int64_t width, int64_t stride, uint32_t* out) {
  const int64_t pairs = (k + 1) / 2, panels = (n + width - 1) / width;
  for (int64_t q = 0; q < panels; ++q) {  // the padding: columns past n, pair rows past k
    const int64_t cols = std::min(width, n - q * width);
    uint32_t* panel = out + q * stride * width;
    if (cols < width)
      for (int64_t p = 0; p < pairs; ++p)
        std::fill(panel + p * width + cols, panel + (p + 1) * width, 0u);
    std::fill(panel + pairs * width, panel + stride * width, 0u);
  }
}

// op(B) (k x n) as panels of `width` columns with `stride` pair rows each (see Bf16Operands),
// the padding zero.
void pack_b(bool tb, int64_t k, int64_t n, const float* b, int64_t ldb, int64_t width,
            int64_t stride, uint32_t* out) {
  if (tb)
    panels_of_transposed_rows(k, n, b, ldb, width, stride, out);
  else
    panels_of_row_pairs(k, n, b, ldb, width, stride, out);
  zero_panel_padding(k, n, width, stride, out);
}

// pack_b(false, ...) from values that are bf16 already: half the bytes to read, nothing to
// round. By rows, panels start at even columns (width is even), so at whole words, and each
// pair of rows is regrouped; by pairs of rows, each panel's slice of a pair row is copied (the
// AMX tiles' layout wants whole panels; the AVX512-BF16 tiles read such words in place).
void pack_kept_b(int64_t k, int64_t n, const uint32_t* words, int64_t ld, bool row_pairs,
                 int64_t width, int64_t stride, uint32_t* out) {
  if (row_pairs) {
    panels_by_row_pairs(k, n, width, stride, out,
                        [&](int64_t p, int64_t j0, int64_t cols, uint32_t* to) {
                          std::copy_n(words + p * ld + j0, cols, to);
                        });
  } else {
    panels_by_row_pairs(
        k, n, width, stride, out, [&](int64_t p, int64_t j0, int64_t cols, uint32_t* to) {
          const uint32_t* first = words + 2 * p * ld + j0 / 2;
          ask_for_rows_ahead(first, ld, (cols + 1) / 2, p, k);
          bf16_pairs_of_kept_rows(first, 2 * p + 1 < k ? first + ld : nullptr, cols, to);
        });
  }
  zero_panel_padding(k, n, width, stride, out);
}

}  // namespace vg::detail
