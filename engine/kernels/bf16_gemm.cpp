#include "engine/kernels/bf16_gemm.h"

#include <algorithm>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/parallel.h"
#include "engine/kernels/axis_sums.h"
#include "engine/kernels/bf16.h"
#include "engine/kernels/bf16_gemm_parts.h"
#include "engine/kernels/matmul_precision.h"
#include "engine/kernels/scratch.h"

namespace vg {
namespace {

using kernels::grow;

// A chain covers at most this many pairs (512 terms of k) before its sums are added to C:
// the pairs of B for one panel (256 x 64 words, 64 KB) stay in L2 while the rows sweep it.
constexpr int64_t kChunkPairs = 256;
constexpr int64_t kMaxPanelCols = 64, kLanes = 16;
// The AMX tiles' blocks of C are 32 x 32 and their steps along k 16 pairs
// (engine/kernels/bf16_gemm_amx.cpp).
constexpr int64_t kAmxBlock = 32, kAmxPairs = 16;
// The AVX512-BF16 loops' blocks of A: 8 of their tiles of 6 rows.
constexpr int64_t kAvx512BlockRows = 48;
// A kept A is written by pairs of rows as each block is packed (keep_by_row_pairs), so no pair
// may span two blocks.
static_assert(kAmxBlock % 2 == 0 && kAvx512BlockRows % 2 == 0, "blocks of whole pairs of rows");
// A product's C at least this large is written with streaming stores where the tiles can.
constexpr int64_t kStreamBytes = int64_t(4) << 20;

int64_t round_up(int64_t x, int64_t to) {
  return (x + to - 1) / to * to;
}

// Where a product's operands come from besides float matrices, and what it leaves: A or B made
// on demand (a null a or b), A already rounded to bf16 by rows (a null a), B kept in bf16 (a
// null b), A's rounded words kept for later, and the sums of a transposed A's columns (see
// chunks_packing_both), and what takes each block of C's rows, once final, in place of C.
struct Sources {
  const MadeRows* made_a = nullptr;
  const Bf16Rows* rounded_a = nullptr;  // A already rounded, by rows (a null a)
  const MadeRows* made_b = nullptr;
  const Bf16Rows* kept_b = nullptr;
  Bf16Rows* keep_a = nullptr;
  double* sums_of_a = nullptr;
  const RowsDone* done = nullptr;
};

// done over the m rows of a C made whole (n floats a row), in blocks of pairs of rows on the
// engine's threads: for the loops that do not hand it C block by block (the fmas', an empty k).
void done_after(int64_t m, int64_t n, const float* c, const RowsDone& done) {
  parallel_for((m + 1) / 2, std::max<int64_t>(1, (1 << 13) / std::max<int64_t>(n, 1)),
               [&](int64_t p0, int64_t p1) { done(2 * p0, std::min(m, 2 * p1), c + 2 * p0 * n); });
}

using RowsKernel = void (*)(const detail::Bf16Operands&, int64_t, int64_t, int64_t, int64_t,
                            int64_t, float, float, const float*, float*, int64_t);

// How the operands are packed for one kind of tile loops, and which loops multiply them.
struct Layout {
  bool amx = false;  // rows of A contiguous and padded, as the AMX tiles read them
  RowsKernel rows = nullptr;
  int64_t panel_cols = 0;  // op(B)'s panel width
  int64_t block_rows = 0;  // rows of A packed at a time when A is not transposed
  int64_t row_step = 0;    // a thread's rows of C are a multiple of this...
  int64_t col_step = 0;    // ...or its columns, where C is shared by columns

  // Pairs and rows as packed: the AMX tiles take whole tiles only, the padding zero.
  int64_t packed_pairs(int64_t pairs) const { return amx ? round_up(pairs, kAmxPairs) : pairs; }
  int64_t packed_rows(int64_t rows) const { return amx ? round_up(rows, kAmxBlock) : rows; }
};

Layout layout_for(Bf16Tiles tiles, int64_t n) {
  if (tiles == Bf16Tiles::amx || tiles == Bf16Tiles::amx_model) {
    const RowsKernel rows =
        tiles == Bf16Tiles::amx ? detail::bf16_rows_amx : detail::bf16_rows_amx_model;
    return {true, rows, kAmxBlock, kAmxBlock, kAmxBlock, kAmxBlock};
  }
  // AVX512-BF16: blocks of the kernel's own 48 rows, its tiles of 6 rows and vectors of 16.
  return {false,
          detail::bf16_rows_avx512,
          std::min(kMaxPanelCols, round_up(n, kLanes)),
          kAvx512BlockRows,
          6,
          kLanes};
}

// Rows [i0, i0 + rows) of A, packed as rows of pairs `pairs` words apart, into `kept` by
// pairs of rows (Bf16Rows::row_pairs): each pair of rows' halves regrouped value by value, as
// the weight gradient reads them, the words past A's columns zero. i0 is even (blocks are of
// an even count of rows: see kAvx512BlockRows), so a pair of rows lies in one block.
void keep_by_row_pairs(const uint32_t* block, int64_t pairs, int64_t i0, int64_t rows,
                       const Bf16Rows& kept) {
  const int64_t ld = kept.ld(), cols = kept.cols;
  for (int64_t i = 0; i < rows; i += 2) {
    uint32_t* out = kept.words() + (i0 + i) / 2 * ld;
    const uint32_t* first = block + i * pairs;
    detail::bf16_pairs_of_kept_rows(first, i + 1 < rows ? first + pairs : nullptr, cols, out);
    std::fill(out + cols, out + ld, 0u);
  }
}

// A not transposed (a linear forward, dX = dY W): A is packed one block of rows at a time, by
// the thread that makes those rows of C, just before it uses them. Packed all at once, A's
// words would be written out past the caches and fetched back; this way they are read from
// L1/L2. A made on demand (`made_a`) is made the same way, a block of rows at a time; where A
// is kept (`keep_a`), each block's words are written out by pairs of rows as they are packed.
// With `done`, each block of C's rows goes to a block of the thread's own, not to c, and done
// takes it from there once its chunks are summed: in L2, and no C written out and read back.
void rows_packing_a(const Layout& layout, const detail::Bf16Operands& packed_b, int64_t m,
                    int64_t n, int64_t k, const float* a, int64_t lda, const Sources& from,
                    float alpha, float beta, const float* start, float* c, int64_t ldc) {
  const MadeRows* made = from.made_a;
  const int64_t pairs = packed_b.pairs, block_rows = layout.block_rows;
  const int64_t blocks = (m + block_rows - 1) / block_rows;
  // The AMX tiles keep a block's sums over the whole of k: a chunk would store them to C and
  // load them back. (A block of A and a panel of B stay in L1/L2 for the k of a ViT.)
  const int64_t chunk = layout.amx ? pairs : kChunkPairs;
  // A C larger than L2, written whole by the tiles (not added to), goes past the caches.
  const bool stream_c = layout.amx && beta == 0.0f && !from.done &&
                        m * n * int64_t(sizeof(float)) >= kStreamBytes &&
                        reinterpret_cast<uintptr_t>(c) % 64 == 0 && ldc % 16 == 0;
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 18) / (block_rows * n * k));
  parallel_for(blocks, grain, [&](int64_t q0, int64_t q1) {
    thread_local detail::PackedWords block;  // grown once per shape, then reused
    thread_local detail::PackedFloats made_rows, c_block;
    grow(block, block_rows * pairs);
    if (from.done) grow(c_block, block_rows * n);
    if (made) grow(made_rows, block_rows * k);
    detail::Bf16Operands ops = packed_b;
    ops.a = block.data(), ops.a_row = pairs, ops.a_pair = 1;
    ops.stream_c = stream_c;
    for (int64_t q = q0; q < q1; ++q) {
      const int64_t i0 = q * block_rows, rows = std::min(block_rows, m - i0);
      if (from.rounded_a) {  // the words the packer would make: copied, padding zero
        for (int64_t i = 0; i < rows; ++i) {
          const uint32_t* words = from.rounded_a->words() + (i0 + i) * from.rounded_a->ld();
          std::copy(words, words + from.rounded_a->pairs(), block.data() + i * pairs);
          std::fill(block.data() + i * pairs + from.rounded_a->pairs(),
                    block.data() + (i + 1) * pairs, 0u);
        }
      } else {
        if (made) made->fill(i0, i0 + rows, 0, k, made_rows.data());
        detail::pairs_of_rows(rows, k, made ? made_rows.data() : a + i0 * lda, made ? k : lda,
                              block.data(), pairs);
      }
      if (from.keep_a) keep_by_row_pairs(block.data(), pairs, i0, rows, *from.keep_a);
      std::fill(block.data() + rows * pairs, block.data() + layout.packed_rows(rows) * pairs, 0u);
      float* out = from.done ? c_block.data() : c + i0 * ldc;
      const int64_t ld_out = from.done ? n : ldc;
      for (int64_t p = 0; p < pairs; p += chunk)
        layout.rows(ops, 0, rows, n, p, std::min(pairs, p + chunk), alpha, p == 0 ? beta : 1.0f,
                    p == 0 ? start : nullptr, out, ld_out);
      if (from.done) (*from.done)(i0, i0 + rows, out);
    }
  });
}

// Whether a chunk of `terms` rows of a B kept by pairs of rows is read where it lies rather than
// packed: by the AVX512-BF16 tiles always; by the AMX tiles where its pairs fill whole tiles and
// each row of words whole panels, so that no tile reads past the kept words (the last chunk
// of a k that is not a multiple of 32 is packed).
bool b_read_in_place(const Layout& layout, const Bf16Rows* kept, int64_t terms) {
  if (!kept || !kept->row_pairs) return false;
  if (!layout.amx) return true;
  return kept->ld() % kAmxBlock == 0 && (terms + 1) / 2 % kAmxPairs == 0;
}

// One thread's packed chunks for chunks_packing_both, grown once per shape, then reused.
struct ChunkBuffers {
  detail::PackedWords a_words, b_words, a_by_pairs;
  detail::PackedFloats made_rows;
};

// The chunk's terms [l0, l0 + terms) of A's columns i0 + [0, rows) (A transposed: k runs down
// A), packed as the tiles read them into buffers.a_words; with `sum_a`, their column sums taken
// on the way.
void pack_a_chunk(const Layout& layout, const float* a, int64_t lda, int64_t l0, int64_t terms,
                  int64_t i0, int64_t rows, double* sum_a, ChunkBuffers& buffers,
                  detail::Bf16Operands& ops) {
  const int64_t pairs = (terms + 1) / 2;
  uint32_t* by_pairs = layout.amx ? buffers.a_by_pairs.data() : buffers.a_words.data();
  const float* a_chunk = a + l0 * lda + i0;
  if (sum_a)
    detail::interleave_rows_summing(terms, rows, a_chunk, lda, by_pairs, rows, sum_a);
  else
    detail::interleave_rows(terms, rows, a_chunk, lda, by_pairs, rows);
  if (layout.amx) {
    detail::pairs_to_rows(by_pairs, pairs, rows, buffers.a_words.data(), ops.pairs,
                          layout.packed_rows(rows));
    ops.a_row = ops.pairs, ops.a_pair = 1;
  } else {
    ops.a_row = 1, ops.a_pair = rows;
  }
  ops.a = buffers.a_words.data();
}

// The same terms of op(B)'s columns j0 + [0, cols): packed into buffers.b_words from floats, from
// a kept B's words, or (`b_in_place`) read where a kept B lies.
void pack_b_chunk(const Layout& layout, bool tb, const float* b, int64_t ldb, const Sources& from,
                  bool b_in_place, int64_t l0, int64_t terms, int64_t j0, int64_t cols,
                  ChunkBuffers& buffers, detail::Bf16Operands& ops) {
  const Bf16Rows* kept = from.kept_b;
  const MadeRows* made_b = from.made_b;
  const int64_t panel_cols = layout.panel_cols;
  if (b_in_place) {  // read where they lie, from column j0
    ops.b = kept->words() + l0 / 2 * kept->ld() + j0, ops.b_ld = kept->ld();
    return;
  }
  if (kept) {  // from column j0 (even: a multiple of the steps)
    const int64_t ld = kept->ld();
    const uint32_t* words =
        kept->row_pairs ? kept->words() + l0 / 2 * ld + j0 : kept->words() + l0 * ld + j0 / 2;
    detail::pack_kept_b(terms, cols, words, ld, kept->row_pairs, panel_cols, ops.pairs,
                        buffers.b_words.data());
  } else {
    float* made = buffers.made_rows.data();
    if (made_b) made_b->fill(l0, l0 + terms, j0, j0 + cols, made);  // its columns
    const float* b_chunk = made_b ? made : tb ? b + j0 * ldb + l0 : b + l0 * ldb + j0;
    detail::pack_b(tb, terms, cols, b_chunk, made_b ? cols : ldb, panel_cols, ops.pairs,
                   buffers.b_words.data());
  }
  ops.b = buffers.b_words.data();
}

// A transposed (a weight gradient dW = dY^T X: k, the batch's tokens, is the long side): A
// and B are packed one chunk of k at a time and that chunk is added to C, so the packed chunk
// stays in cache instead of the whole of both operands making a round trip through memory.
// The chunks are kChunkPairs long and added in order.
//
// Each thread owns a fixed block of C for the whole sum and packs its own chunks: its rows'
// columns of A and all of B, or its columns of B and all of A, whichever copies less. One
// parallel region per product, not one per chunk, whose start and end would cost more than
// a chunk's arithmetic where C is small (a convolution's weight gradient). B made on demand
// (`made_b`, not transposed) is made a chunk of rows at a time by each thread; B kept in bf16
// (`kept_b`) is packed from its words, or read where it lies where it is kept by pairs of rows
// and the tiles allow (b_read_in_place).
// For the AMX tiles each chunk of A is turned into rows after it is packed (pairs_to_rows).
//
// With `sums_of_a`, the sums of A's columns are taken as A is packed, in double, each
// kColumnSumRows rows of k from zero: chunk s's sum of column i into sums_of_a[s * m + i]
// (zero on entry), by the one thread that packs column i.
void chunks_packing_both(const Layout& layout, bool tb, int64_t m, int64_t n, int64_t k,
                         float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
                         const Sources& from, float beta, float* c, int64_t ldc,
                         const float* start) {
  static_assert(kernels::kColumnSumRows % (2 * kChunkPairs) == 0, "a chunk of k in one sum");
  const int64_t panel_cols = layout.panel_cols;
  const int64_t chunk = 2 * kChunkPairs, last_terms = k - (k - 1) / chunk * chunk;
  const bool packs_b = !b_read_in_place(layout, from.kept_b, std::min(k, chunk)) ||
                       !b_read_in_place(layout, from.kept_b, last_terms);
  // C's block (rows i0 + [0, rows), columns j0 + [0, cols)) over the whole of k.
  auto block = [&](int64_t i0, int64_t rows, int64_t j0, int64_t cols) {
    const int64_t panels = (cols + panel_cols - 1) / panel_cols;
    thread_local ChunkBuffers buffers;
    grow(buffers.a_words, kChunkPairs * layout.packed_rows(rows));
    if (layout.amx) grow(buffers.a_by_pairs, kChunkPairs * rows);
    if (packs_b) grow(buffers.b_words, panels * kChunkPairs * panel_cols);
    if (from.made_b) grow(buffers.made_rows, 2 * kChunkPairs * cols);
    // By columns of C all threads share A: one of them sums its columns.
    const bool sums = from.sums_of_a && (m >= n || j0 == 0);
    for (int64_t l0 = 0; l0 < k; l0 += chunk) {
      const int64_t terms = std::min(chunk, k - l0);
      detail::Bf16Operands ops;
      ops.pairs = layout.packed_pairs((terms + 1) / 2), ops.panel_cols = panel_cols;
      double* sum_a = sums ? from.sums_of_a + l0 / kernels::kColumnSumRows * m + i0 : nullptr;
      pack_a_chunk(layout, a, lda, l0, terms, i0, rows, sum_a, buffers, ops);
      const bool b_in_place = b_read_in_place(layout, from.kept_b, terms);
      pack_b_chunk(layout, tb, b, ldb, from, b_in_place, l0, terms, j0, cols, buffers, ops);
      const bool first = l0 == 0;
      layout.rows(ops, 0, rows, cols, 0, ops.pairs, alpha, first ? beta : 1.0f,
                  first && start ? start + j0 : nullptr, c + i0 * ldc + j0, ldc);
    }
  };
  const int64_t grain_macs = int64_t(1) << 18;
  // A B read where it lies costs no copy: then each thread packs only its rows' columns of A.
  // (fc2's weight gradient at dim 192, 192 x 768 x 6400, took 0.95-0.97 of its time by columns
  // on an AMX Xeon's tiles, 0.98-0.99 on its AVX512-BF16 loops.)
  if (m >= n || !packs_b) {  // rows of C in the kernel's row steps
    const int64_t step = layout.row_step, steps = (m + step - 1) / step;
    const int64_t grain = std::max<int64_t>(1, grain_macs / (step * n * k));
    parallel_for(steps, grain, [&](int64_t t0, int64_t t1) {
      block(t0 * step, std::min(m, t1 * step) - t0 * step, 0, n);
    });
  } else {  // columns of C in the kernel's column steps
    const int64_t step = layout.col_step, steps = (n + step - 1) / step;
    const int64_t grain = std::max<int64_t>(1, grain_macs / (step * m * k));
    parallel_for(steps, grain, [&](int64_t v0, int64_t v1) {
      block(0, m, v0 * step, std::min(n, v1 * step) - v0 * step);
    });
  }
}

// The loops `best` stands for, for a product of this size on this CPU; other kinds as asked.
Bf16Tiles chosen(Bf16Tiles tiles, int64_t m, int64_t n, int64_t k) {
  if (tiles != Bf16Tiles::best) return tiles;
  if (bf16_stand_in() == Bf16StandIn::model) return Bf16Tiles::amx_model;
  if (bf16_stand_in() == Bf16StandIn::fma) return Bf16Tiles::fma;
  if (bf16_hardware() != Bf16Hardware::amx) return Bf16Tiles::avx512_bf16;
  return m * n * k >= kAmxMinMacs ? Bf16Tiles::amx : Bf16Tiles::fma;
}

// The floats a kept matrix stands for (exact), its rows cols apart: value (i, j) is one half
// of word (i, j / 2) by rows, of word (i / 2, j) by pairs of rows.
std::vector<float> floats_of(const Bf16Rows& kept) {
  std::vector<float> out(size_t(kept.rows * kept.cols));
  for (int64_t i = 0; i < kept.rows; ++i)
    for (int64_t j = 0; j < kept.cols; ++j) {
      const int64_t line = kept.row_pairs ? i / 2 : i, at = kept.row_pairs ? j : j / 2;
      const bool high = kept.row_pairs ? i % 2 : j % 2;
      const uint32_t word = kept.words()[line * kept.ld() + at];
      out[size_t(i * kept.cols + j)] = from_bf16(bf16(high ? word >> 16 : word & 0xFFFFu));
    }
  return out;
}

// A's rows (m x k floats, lda apart) rounded into `kept` by pairs of rows, the words past k zero.
void round_by_row_pairs(int64_t m, int64_t k, const float* a, int64_t lda, const Bf16Rows& kept) {
  for (int64_t p = 0; 2 * p < m; ++p) {
    const float* first = a + 2 * p * lda;
    detail::bf16_pair_row(first, 2 * p + 1 < m ? first + lda : nullptr, k, kept.ld(),
                          kept.words() + p * kept.ld());
  }
}

// Bf16Tiles::fma: an operand made on demand is made whole first (a small product's), a kept
// one turned back into floats (exactly), and a kept A rounded as the tiles' packers round it.
void product_on_fmas(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                     int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
                     const float* start, const Sources& from) {
  std::vector<float> whole;
  if (from.made_a || from.made_b) whole = made_whole(from.made_a ? *from.made_a : *from.made_b);
  if (from.kept_b) whole = floats_of(*from.kept_b);
  if (from.rounded_a) whole = floats_of(*from.rounded_a);
  if (from.made_a || from.rounded_a) a = whole.data();
  if (from.made_b || from.kept_b) b = whole.data();
  if (from.keep_a) round_by_row_pairs(m, k, a, lda, *from.keep_a);
  detail::bf16_product_fma(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, start);
  if (from.done) done_after(m, n, c, *from.done);
}

// gemm_bf16, with the operands and results `from` names besides a and b.
void product(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
             int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
             const float* start, Bf16Tiles tiles, const Sources& from = {}) {
  if (m <= 0 || n <= 0) return;
  const Bf16Hardware units = bf16_hardware();
  tiles = chosen(tiles, m, n, k);
  const bool on_any_cpu = tiles == Bf16Tiles::amx_model || tiles == Bf16Tiles::fma;
  check(units != Bf16Hardware::none || on_any_cpu,
        "gemm_bf16: this CPU has no AVX512-BF16 (product ", m, "x", n, "x", k, ")");
  check(tiles != Bf16Tiles::amx || units == Bf16Hardware::amx,
        "gemm_bf16: AMX tiles asked for on a CPU without them");
  if (start) beta = 0.0f;
  std::vector<float> whole_c;  // C made whole, for `done`, where the loops do not hand it blocks
  if (from.done && (k <= 0 || tiles == Bf16Tiles::fma)) {
    whole_c.resize(size_t(m * n));
    c = whole_c.data(), ldc = n;
  }
  if (k <= 0) {  // an empty sum: C = alpha * start, or beta * C
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        c[i * ldc + j] = start ? alpha * start[j] : beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
    if (from.done) done_after(m, n, c, *from.done);
    return;
  }
  if (tiles == Bf16Tiles::fma)
    return product_on_fmas(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, start, from);
  const Layout layout = layout_for(tiles, n);
  if (ta)
    return chunks_packing_both(layout, tb, m, n, k, alpha, a, lda, b, ldb, from, beta, c, ldc,
                               start);
  // op(B) packed whole (a layer's weights, or one attention head's operand): grown once per
  // shape, then reused; the workers read the caller's.
  thread_local detail::PackedWords b_words;
  detail::Bf16Operands ops;
  ops.pairs = layout.packed_pairs((k + 1) / 2);
  ops.panel_cols = layout.panel_cols;
  const int64_t panels = (n + layout.panel_cols - 1) / layout.panel_cols;
  grow(b_words, panels * ops.pairs * layout.panel_cols);
  detail::pack_b(tb, k, n, b, ldb, layout.panel_cols, ops.pairs, b_words.data());
  ops.b = b_words.data();
  rows_packing_a(layout, ops, m, n, k, a, lda, from, alpha, beta, start, c, ldc);
}

}  // namespace

void gemm_bf16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
               int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
               const float* start, Bf16Tiles tiles) {
  product(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, start, tiles);
}

void gemm_bf16_then(int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                    const RowsDone& done, Bf16Tiles tiles) {
  product(false, false, m, n, k, 1.0f, a, k, b, n, 0.0f, nullptr, n, nullptr, tiles,
          {.done = &done});
}

void gemm_bf16_made_a(const MadeRows& a, int64_t n, const float* b, int64_t ldb, float* c,
                      int64_t ldc, const float* start, Bf16Tiles tiles, const RowsDone* done) {
  product(false, true, a.rows, n, a.cols, 1.0f, nullptr, a.cols, b, ldb, 0.0f, c, ldc, start, tiles,
          {.made_a = &a, .done = done});
}

void gemm_bf16_rounded_a(const Bf16Rows& a, int64_t n, const float* b, int64_t ldb, float* c,
                         int64_t ldc, const float* start, Bf16Tiles tiles, const RowsDone* done) {
  check(!a.row_pairs, "gemm_bf16_rounded_a: A must be rounded by rows, not by pairs of rows");
  product(false, true, a.rows, n, a.cols, 1.0f, nullptr, a.cols, b, ldb, 0.0f, c, ldc, start, tiles,
          {.rounded_a = &a, .done = done});
}

void gemm_bf16_made_b(int64_t m, const float* a, int64_t lda, const MadeRows& b, float* c,
                      int64_t ldc, Bf16Tiles tiles) {
  product(true, false, m, b.cols, b.rows, 1.0f, a, lda, nullptr, b.cols, 0.0f, c, ldc, nullptr,
          tiles, {.made_b = &b});
}

void gemm_bf16_keeping_a(int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                         const float* start, float* c, Bf16Rows& kept, Bf16Tiles tiles,
                         const RowsDone* done) {
  kept = make_bf16_rows(m, k, /*row_pairs=*/true);
  if (n <= 0) return round_by_row_pairs(m, k, a, k, kept);
  product(false, true, m, n, k, 1.0f, a, k, b, k, 0.0f, c, n, start, tiles,
          {.keep_a = &kept, .done = done});
}

namespace {

// gemm_bf16_tn_sums with B as floats (b) or kept in bf16 (kept_b).
void tn_sums(int64_t m, int64_t n, int64_t k, const float* a, const float* b,
             const Bf16Rows* kept_b, float* c, float* sums, Bf16Tiles tiles) {
  // The product, then the sums as `sum` takes them: the fmas' loops do not take sums.
  if (m <= 1 || n <= 0 || k <= 0 || chosen(tiles, m, n, k) == Bf16Tiles::fma) {
    product(true, false, m, n, k, 1.0f, a, m, b, n, 0.0f, c, n, nullptr, tiles, {.kept_b = kept_b});
    return kernels::sum_middle_axis(a, sums, 1, k, m);
  }
  const int64_t chunks = (k + kernels::kColumnSumRows - 1) / kernels::kColumnSumRows;
  thread_local std::vector<double> parts;  // the caller's, shared by the workers
  parts.assign(chunks * m, 0.0);
  product(true, false, m, n, k, 1.0f, a, m, b, n, 0.0f, c, n, nullptr, tiles,
          {.kept_b = kept_b, .sums_of_a = parts.data()});
  kernels::add_column_chunks(parts.data(), chunks, m, sums);
}

}  // namespace

void gemm_bf16_tn_sums(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c,
                       float* sums, Bf16Tiles tiles) {
  tn_sums(m, n, k, a, b, nullptr, c, sums, tiles);
}

void gemm_bf16_tn_sums(int64_t m, const float* a, const Bf16Rows& b, float* c, float* sums,
                       Bf16Tiles tiles) {
  tn_sums(m, b.cols, b.rows, a, nullptr, &b, c, sums, tiles);
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
