// The float tiles' products with one operand made on demand (engine/kernels/made_rows.h): a
// convolution's columns, which repeat the image's values up to k x k times, or GELU's values
// on their way into fc2 (gelu_linear's forward). Each thread makes a block of the operand's
// rows into a buffer of its own, from the image or from h, and the tiles read the block there,
// in cache, as they would read the stored matrix. Likewise a product whose C is handed on a
// block of rows at a time from such a buffer, never stored (RowsDone: gelu_linear's input
// gradient on its way through GELU's gradient). The products cut k into the same chunks and
// run the same tiles as gemm_tiled.h's on the stored matrix, so each element of C is the same
// fma chain: the same bits. Internal to the tiles (engine/kernels/gemm_avx512.cpp,
// engine/kernels/gemm_avx2.cpp) and to engine/kernels/gemm_simd.cpp, which asks which shapes
// they take.
#pragma once

#include <algorithm>
#include <cstdint>

#include "engine/core/parallel.h"
#include "engine/kernels/cache_line_vector.h"
#include "engine/kernels/gemm_tiled.h"
#include "engine/kernels/made_rows.h"
#include "engine/kernels/scratch.h"

namespace vg::detail::tiled {

// The shapes that product_made_a() and transposed_a_product_made_b() take: those that
// product() takes whole (k up to kMaxK) and those that transposed_a_product() computes as C^T.
inline bool made_a_fits(int64_t m, int64_t n, int64_t k) {
  return m >= kMinRows && n >= kMinCols && k >= kMinK && k <= kMaxK;
}
template <class Tiles>
bool made_b_fits(int64_t m, int64_t n, int64_t k) {
  return m >= kMinRowsTransposed && m >= kMinCols && n >= kMinRowsTransposed &&
         k >= kMinKTransposed && n > PackedB<Tiles>::kWidth && m < n;
}
// Both, for a made matrix of rows x cols and n columns of Y: a convolution's forward and its
// weight gradient.
template <class Tiles>
bool makes_rows(int64_t rows, int64_t cols, int64_t n) {
  return made_a_fits(rows, n, cols) && made_b_fits<Tiles>(n, cols, rows);
}

// product()'s sweep where op(B) is packed whole (k up to kMaxK): the threads share C's row
// tiles, and each runs block(ib, ie, buffer) on its tiles a block of product()'s at a time
// (rows [ib, ie)), with a buffer of its own of buffer_cols floats a row for the block.
template <class Tiles, class Block>
void sweep_blocks(int64_t m, int64_t n, int64_t k, int64_t buffer_cols, Block block) {
  constexpr int64_t kRows = Tiles::kRows;
  const int64_t tiles = (m + kRows - 1) / kRows, block_rows = Tiles::kBlockTiles * kRows;
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 17) / (kRows * n * k));
  parallel_for(tiles, grain, [&](int64_t t0, int64_t t1) {
    thread_local kernels::CacheLineVector<float> buffer;  // grown once per shape, then reused
    kernels::grow(buffer, block_rows * buffer_cols);
    const int64_t i1 = std::min(m, t1 * kRows);
    for (int64_t ib = t0 * kRows; ib < i1; ib += block_rows)
      block(ib, std::min(i1, ib + block_rows), buffer.data());
  });
}

// `rows` rows of C (ldc apart) = the same rows of A (lda apart) times the packed op(B) (k x n),
// all of k's chunks in order (see kChunk), each chain started from start or zero.
template <class Tiles>
void rows_of_c(int64_t rows, int64_t n, int64_t k, const float* a, int64_t lda,
               const PackedB<Tiles>& packed, const float* start, float* c, int64_t ldc) {
  const int64_t panels = (n + PackedB<Tiles>::kWidth - 1) / PackedB<Tiles>::kWidth;
  for (int64_t p = 0; p < k; p += kChunk)
    part_of_c<Tiles, false>(0, rows, 0, panels, n, std::min(kChunk, k - p), 1.0f, a + p, lda,
                            packed, p, p == 0 ? 0.0f : 1.0f, p == 0 ? start : nullptr, c, ldc);
}

// C (a.rows x n) = A B^T + start in every row, B (n x a.cols), start (n) or null: product()'s
// route for gemm_bias, with op(B) packed whole, so for a k up to kMaxK. Each thread makes the
// rows of A a block at a time (the blocks product() sweeps) and runs all of k's chunks on the
// block while it is in cache. False (touching nothing) for a shape product() would not take
// whole.
template <class Tiles>
bool product_made_a(const MadeRows& a, int64_t n, const float* b, const float* start, float* c) {
  const int64_t m = a.rows, k = a.cols;
  if (!made_a_fits(m, n, k)) return false;
  thread_local PackedB<Tiles> packed_here;
  const PackedB<Tiles>& packed = packed_here;  // the caller's, read by every thread
  packed_here.pack(true, 0, k, n, b, k);
  sweep_blocks<Tiles>(m, n, k, k, [&](int64_t ib, int64_t ie, float* rows) {  // a block of A
    a.fill(ib, ie, 0, k, rows);
    rows_of_c<Tiles>(ie - ib, n, k, rows, k, packed, start, c + ib * n, n);
  });
  return true;
}

// C (m x n) = A B for row-major A (m x k) and B (k x n), each block of C's rows (the blocks
// product() sweeps) made by the tiles in a buffer of the thread's own and handed to done there,
// in cache: product()'s route with op(B) packed whole, so for a k up to kMaxK, and its bits.
// False (touching nothing) for a shape product() would not take whole.
template <class Tiles>
bool product_then(int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                  const RowsDone& done) {
  if (!made_a_fits(m, n, k)) return false;
  thread_local PackedB<Tiles> packed_here;
  const PackedB<Tiles>& packed = packed_here;  // the caller's, read by every thread
  packed_here.pack(false, 0, k, n, b, n);
  sweep_blocks<Tiles>(m, n, k, n, [&](int64_t ib, int64_t ie, float* rows) {  // a block of C
    rows_of_c<Tiles>(ie - ib, n, k, a + ib * k, k, packed, nullptr, rows, n);
    done(ib, ie, rows);
  });
  return true;
}

// C (m x b.cols) = A^T B for A (b.rows x m) stored and B made: a convolution's weight gradient
// dY^T X, k = every output position of the batch. As transposed_a_product() does where B is the
// wider operand, it computes C^T = B^T A, with B in A's place: the threads share C^T's rows, so
// each makes only its own columns of B, a chunk of k at a time, and the tiles read that block
// as they would read the stored B. False (touching nothing) for a shape that
// transposed_a_product() would not compute that way.
template <class Tiles>
bool transposed_a_product_made_b(int64_t m, const float* a, const MadeRows& b, float* c) {
  const int64_t n = b.cols, k = b.rows;
  constexpr int64_t kRows = Tiles::kRows, kWidth = PackedB<Tiles>::kWidth;
  if (!made_b_fits<Tiles>(m, n, k)) return false;
  // C^T (n x m) = B^T A: B's columns are C^T's rows, A (k x m) is packed chunk by chunk.
  const int64_t panels = (m + kWidth - 1) / kWidth, tiles = (n + kRows - 1) / kRows;
  thread_local kernels::CacheLineVector<float> c_transposed;  // grown once per shape, then reused
  kernels::grow(c_transposed, n * m);
  float* ct = c_transposed.data();
  parallel_for(tiles, 1, [&](int64_t t0, int64_t t1) {
    const int64_t i0 = t0 * kRows, i1 = std::min(n, t1 * kRows), width = i1 - i0;
    thread_local PackedB<Tiles> chunk;
    thread_local kernels::CacheLineVector<float> columns;  // this thread's columns of a chunk
    kernels::grow(columns, kChunkTransposed * width);
    for (int64_t p = 0; p < k; p += kChunkTransposed) {
      const int64_t rows = std::min(kChunkTransposed, k - p);
      b.fill(p, p + rows, i0, i1, columns.data());
      chunk.pack(false, p, rows, m, a, m);
      part_of_c<Tiles, true>(0, width, 0, panels, m, rows, 1.0f, columns.data(), width, chunk, 0,
                             p == 0 ? 0.0f : 1.0f, nullptr, ct + i0 * m, m);
    }
  });
  transposed_into(ct, m, n, c, n);
  return true;
}

}  // namespace vg::detail::tiled
