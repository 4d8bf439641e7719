#include "engine/kernels/bf16_gemm.h"

#include <algorithm>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/parallel.h"
#include "engine/kernels/axis_sums.h"
#include "engine/kernels/bf16.h"
#include "engine/kernels/bf16_gemm_parts.h"
#include "engine/kernels/matmul_precision.h"

namespace vg {
namespace {

// A chain covers at most this many pairs (512 terms of k) before its sums are added to C:
// the pairs of B for one panel (256 x 64 words, 64 KB) stay in L2 while the rows sweep it.
constexpr int64_t kChunkPairs = 256;
constexpr int64_t kMaxPanelCols = 64, kLanes = 16;
// Rows of C per block when A is packed block by block: the AVX512-BF16 kernel's own block.
constexpr int64_t kBlockRows = 48;

int64_t round_up(int64_t x, int64_t to) {
  return (x + to - 1) / to * to;
}

// How the packed operands are laid out for one kind of bf16 unit (see Bf16Operands).
struct Layout {
  int64_t pairs, panel_cols;
  int64_t a_rows;          // rows of packed A (those past m are zero)
  bool a_rows_contiguous;  // each row's pairs contiguous (else each pair's rows)
  int64_t tile_rows;       // rows of C a thread's share is a multiple of
};

Layout layout_for(bool amx, bool ta, int64_t m, int64_t n, int64_t k) {
  const int64_t pairs = (k + 1) / 2;
  if (amx)  // whole tiles only (engine/kernels/bf16_gemm_amx.cpp)
    return {round_up(pairs, 16), n <= 32 ? 32 : 64, round_up(m, 32), true, 32};
  // AVX512-BF16: a transposed A is packed as it lies, each pair's rows contiguous.
  return {pairs, std::min(kMaxPanelCols, round_up(n, kLanes)), m, !ta, 6};
}

// AVX512-BF16 with A not transposed (a linear forward, dX = dY W): A is packed one block of
// rows at a time, by the thread that makes those rows of C, just before it uses them. Packed
// all at once, A's words would be written out past the caches and fetched back; this way they
// are read from L1/L2. Each element of C is the same chain as before, so the bits are too.
// A made on demand (`made`, a null `a`) is made the same way, a block of rows at a time.
void rows_packing_a(const detail::Bf16Operands& packed_b, int64_t m, int64_t n, int64_t k,
                    const float* a, int64_t lda, const MadeRows* made, float alpha, float beta,
                    const float* start, float* c, int64_t ldc) {
  const int64_t pairs = packed_b.pairs, blocks = (m + kBlockRows - 1) / kBlockRows;
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 18) / (kBlockRows * n * k));
  parallel_for(blocks, grain, [&](int64_t q0, int64_t q1) {
    thread_local std::vector<uint32_t> block;  // grown once per shape, then reused
    thread_local std::vector<float> made_rows;
    if (block.size() < size_t(kBlockRows * pairs)) block.resize(kBlockRows * pairs);
    if (made && made_rows.size() < size_t(kBlockRows * k)) made_rows.resize(kBlockRows * k);
    detail::Bf16Operands ops = packed_b;
    ops.a = block.data(), ops.a_row = pairs, ops.a_pair = 1;
    for (int64_t q = q0; q < q1; ++q) {
      const int64_t i0 = q * kBlockRows, rows = std::min(kBlockRows, m - i0);
      if (made) made->fill(i0, i0 + rows, 0, k, made_rows.data());
      detail::pairs_of_rows(rows, k, made ? made_rows.data() : a + i0 * lda, made ? k : lda,
                            block.data());
      for (int64_t p = 0; p < pairs; p += kChunkPairs)
        detail::bf16_rows_avx512(ops, 0, rows, n, p, std::min(pairs, p + kChunkPairs), alpha,
                                 p == 0 ? beta : 1.0f, p == 0 ? start : nullptr, c + i0 * ldc,
                                 ldc);
    }
  });
}

// AVX512-BF16 with A transposed (a weight gradient dW = dY^T X: k, the batch's tokens, is the
// long side): A and B are packed one chunk of k at a time and that chunk is added to C, so
// the packed chunk stays in cache instead of the whole of both operands making a round trip
// through memory. The chunks are kChunkPairs long and added in order.
//
// Each thread owns a fixed block of C for the whole sum and packs its own chunks: its rows'
// columns of A and all of B, or its columns of B and all of A, whichever copies less. One
// parallel region per product, not one per chunk, whose start and end would cost more than
// a chunk's arithmetic where C is small (a convolution's weight gradient). B made on demand
// (`made_b`, not transposed, a null `b`) is made a chunk of rows at a time by each thread.
//
// With `sums_of_a`, the sums of A's columns are taken as A is packed, in double, each
// kColumnSumRows rows of k from zero: chunk s's sum of column i into sums_of_a[s * m + i]
// (zero on entry), by the one thread that packs column i.
void chunks_packing_both(bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                         int64_t lda, const float* b, int64_t ldb, const MadeRows* made_b,
                         float beta, float* c, int64_t ldc, const float* start, int64_t panel_cols,
                         double* sums_of_a) {
  static_assert(kernels::kColumnSumRows % (2 * kChunkPairs) == 0, "a chunk of k in one sum");
  // C's block (rows i0 + [0, rows), columns j0 + [0, cols)) over the whole of k.
  auto block = [&](int64_t i0, int64_t rows, int64_t j0, int64_t cols) {
    const int64_t panels = (cols + panel_cols - 1) / panel_cols;
    thread_local std::vector<uint32_t> a_words, b_words;  // grown once per shape, then reused
    thread_local std::vector<float> made_rows;
    if (a_words.size() < size_t(kChunkPairs * rows)) a_words.resize(kChunkPairs * rows);
    if (b_words.size() < size_t(panels * kChunkPairs * panel_cols))
      b_words.resize(panels * kChunkPairs * panel_cols);
    if (made_b && made_rows.size() < size_t(2 * kChunkPairs * cols))
      made_rows.resize(2 * kChunkPairs * cols);
    for (int64_t l0 = 0; l0 < k; l0 += 2 * kChunkPairs) {
      const int64_t terms = std::min(2 * kChunkPairs, k - l0);
      detail::Bf16Operands ops;
      ops.pairs = (terms + 1) / 2, ops.panel_cols = panel_cols;
      const float* a_chunk = a + l0 * lda + i0;
      if (sums_of_a && (m >= n || j0 == 0))  // by columns of C, all share A: one thread sums
        detail::interleave_rows_summing(terms, rows, a_chunk, lda, a_words.data(), rows,
                                        sums_of_a + l0 / kernels::kColumnSumRows * m + i0);
      else
        detail::interleave_rows(terms, rows, a_chunk, lda, a_words.data(), rows);
      if (made_b) made_b->fill(l0, l0 + terms, j0, j0 + cols, made_rows.data());  // its columns
      const float* b_chunk = made_b ? made_rows.data() : tb ? b + j0 * ldb + l0 : b + l0 * ldb + j0;
      detail::pack_b(tb, terms, cols, b_chunk, made_b ? cols : ldb, panel_cols, ops.pairs,
                     b_words.data());
      ops.a = a_words.data(), ops.a_row = 1, ops.a_pair = rows, ops.b = b_words.data();
      const bool first = l0 == 0;
      detail::bf16_rows_avx512(ops, 0, rows, cols, 0, ops.pairs, alpha, first ? beta : 1.0f,
                               first && start ? start + j0 : nullptr, c + i0 * ldc + j0, ldc);
    }
  };
  const int64_t grain_macs = int64_t(1) << 18;
  if (m >= n) {  // rows of C in the kernel's tiles of 6
    const int64_t tiles = (m + 5) / 6, grain = std::max<int64_t>(1, grain_macs / (6 * n * k));
    parallel_for(tiles, grain, [&](int64_t t0, int64_t t1) {
      block(t0 * 6, std::min(m, t1 * 6) - t0 * 6, 0, n);
    });
  } else {  // columns of C in vectors of 16
    const int64_t vectors = (n + kLanes - 1) / kLanes;
    const int64_t grain = std::max<int64_t>(1, grain_macs / (kLanes * m * k));
    parallel_for(vectors, grain, [&](int64_t v0, int64_t v1) {
      block(0, m, v0 * kLanes, std::min(n, v1 * kLanes) - v0 * kLanes);
    });
  }
}

// gemm_bf16, with A or B made on demand where made_a or made_b is given (and a or b null).
void product(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
             int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
             const float* start, Bf16Tiles tiles, const MadeRows* made_a, const MadeRows* made_b) {
  if (m <= 0 || n <= 0) return;
  const Bf16Hardware units = bf16_hardware();
  check(units != Bf16Hardware::none, "gemm_bf16: this CPU has no AVX512-BF16 (product ", m, "x", n,
        "x", k, ")");
  check(tiles != Bf16Tiles::amx || units == Bf16Hardware::amx,
        "gemm_bf16: AMX tiles asked for on a CPU without them");
  if (tiles == Bf16Tiles::best)
    tiles = units == Bf16Hardware::amx ? Bf16Tiles::amx : Bf16Tiles::avx512_bf16;
  const bool amx_layout = tiles == Bf16Tiles::amx || tiles == Bf16Tiles::amx_model;
  if (start) beta = 0.0f;
  if (k <= 0) {  // an empty sum: C = alpha * start, or beta * C
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        c[i * ldc + j] = start ? alpha * start[j] : beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
    return;
  }
  if (amx_layout && (made_a || made_b)) {  // the AMX path packs its operands whole
    const std::vector<float> whole = made_whole(made_a ? *made_a : *made_b);
    return product(ta, tb, m, n, k, alpha, made_a ? whole.data() : a, lda,
                   made_b ? whole.data() : b, ldb, beta, c, ldc, start, tiles, nullptr, nullptr);
  }
  const Layout layout = layout_for(amx_layout, ta, m, n, k);
  if (!amx_layout && ta)
    return chunks_packing_both(tb, m, n, k, alpha, a, lda, b, ldb, made_b, beta, c, ldc, start,
                               layout.panel_cols, nullptr);
  // Grown once per shape, then reused; a worker thread reads the caller's.
  thread_local std::vector<uint32_t> a_words, b_words;
  const int64_t panels = (n + layout.panel_cols - 1) / layout.panel_cols;
  if (b_words.size() < size_t(panels * layout.pairs * layout.panel_cols))
    b_words.resize(panels * layout.pairs * layout.panel_cols);
  detail::Bf16Operands ops;
  ops.pairs = layout.pairs;
  ops.panel_cols = layout.panel_cols;
  detail::pack_b(tb, k, n, b, ldb, layout.panel_cols, layout.pairs, b_words.data());
  ops.b = b_words.data();
  if (!amx_layout) return rows_packing_a(ops, m, n, k, a, lda, made_a, alpha, beta, start, c, ldc);
  if (a_words.size() < size_t(layout.a_rows * layout.pairs))
    a_words.resize(layout.a_rows * layout.pairs);
  if (ta)
    detail::pack_transposed_a_by_rows(m, k, a, lda, a_words.data(), layout.pairs);
  else
    detail::pack_rows_of_a(m, k, a, lda, a_words.data(), layout.pairs);
  std::fill(a_words.data() + m * layout.pairs, a_words.data() + layout.a_rows * layout.pairs, 0u);
  ops.a_row = layout.pairs, ops.a_pair = 1;
  ops.a = a_words.data();

  const auto rows = tiles == Bf16Tiles::amx         ? detail::bf16_rows_amx
                    : tiles == Bf16Tiles::amx_model ? detail::bf16_rows_amx_model
                                                    : detail::bf16_rows_avx512;
  // Each thread takes a part of C, at least ~2^18 multiply-adds, and sweeps it once per chunk
  // of k (the chunk's pairs of B stay in L2 meanwhile): whole row tiles where C is tall
  // enough to share that way; a short C (a convolution's weight gradient, c_out rows) in
  // blocks of a row tile by a panel, in row-major order.
  const int64_t row_tiles = (m + layout.tile_rows - 1) / layout.tile_rows;
  const int64_t width = layout.panel_cols, macs = int64_t(1) << 18;
  auto chunks = [&](int64_t i0, int64_t i1, int64_t q0, int64_t q1, int64_t p) {
    const int64_t j0 = q0 * width;
    detail::Bf16Operands part = ops;
    part.b = ops.b + q0 * ops.pairs * width;
    rows(part, i0, i1, std::min(n, q1 * width) - j0, p, std::min(ops.pairs, p + kChunkPairs), alpha,
         p == 0 ? beta : 1.0f, p == 0 && start ? start + j0 : nullptr, c + j0, ldc);
  };
  if (row_tiles >= 2 * num_threads() || panels == 1) {
    const int64_t grain = std::max<int64_t>(1, macs / (layout.tile_rows * n * k));
    parallel_for(row_tiles, grain, [&](int64_t t0, int64_t t1) {
      const int64_t i0 = t0 * layout.tile_rows, i1 = std::min(m, t1 * layout.tile_rows);
      for (int64_t p = 0; p < ops.pairs; p += kChunkPairs) chunks(i0, i1, 0, panels, p);
    });
    return;
  }
  const int64_t grain = std::max<int64_t>(1, macs / (layout.tile_rows * width * k));
  parallel_for(row_tiles * panels, grain, [&](int64_t first, int64_t end) {
    for (int64_t p = 0; p < ops.pairs; p += kChunkPairs)
      for (int64_t block = first; block < end;) {  // the blocks of one row tile at a time
        const int64_t tile = block / panels, q0 = block % panels;
        const int64_t q1 = std::min(panels, q0 + (end - block)), i0 = tile * layout.tile_rows;
        chunks(i0, std::min(m, i0 + layout.tile_rows), q0, q1, p);
        block += q1 - q0;
      }
  });
}

}  // namespace

void gemm_bf16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
               int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
               const float* start, Bf16Tiles tiles) {
  product(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, start, tiles, nullptr, nullptr);
}

void gemm_bf16_made_a(const MadeRows& a, int64_t n, const float* b, int64_t ldb, float* c,
                      int64_t ldc, const float* start, Bf16Tiles tiles) {
  product(false, true, a.rows, n, a.cols, 1.0f, nullptr, a.cols, b, ldb, 0.0f, c, ldc, start, tiles,
          &a, nullptr);
}

void gemm_bf16_made_b(int64_t m, const float* a, int64_t lda, const MadeRows& b, float* c,
                      int64_t ldc, Bf16Tiles tiles) {
  product(true, false, m, b.cols, b.rows, 1.0f, a, lda, nullptr, b.cols, 0.0f, c, ldc, nullptr,
          tiles, nullptr, &b);
}

void gemm_bf16_tn_sums(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c,
                       float* sums, Bf16Tiles tiles) {
  const bool amx = tiles == Bf16Tiles::amx || tiles == Bf16Tiles::amx_model ||
                   (tiles == Bf16Tiles::best && bf16_hardware() == Bf16Hardware::amx);
  if (amx || m <= 1 || n <= 0 || k <= 0) {  // the product, then the sums as `sum` takes them
    product(true, false, m, n, k, 1.0f, a, m, b, n, 0.0f, c, n, nullptr, tiles, nullptr, nullptr);
    return kernels::sum_middle_axis(a, sums, 1, k, m);
  }
  check(bf16_hardware() != Bf16Hardware::none, "gemm_bf16: this CPU has no AVX512-BF16 (product ",
        m, "x", n, "x", k, ")");
  const int64_t chunks = (k + kernels::kColumnSumRows - 1) / kernels::kColumnSumRows;
  thread_local std::vector<double> parts;  // the caller's, shared by the workers
  parts.assign(chunks * m, 0.0);
  chunks_packing_both(false, m, n, k, 1.0f, a, m, b, n, nullptr, 0.0f, c, n, nullptr,
                      layout_for(false, true, m, n, k).panel_cols, parts.data());
  kernels::add_column_chunks(parts.data(), chunks, m, sums);
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
