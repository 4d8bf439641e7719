// How vitgrad's own float products are laid out, whatever the vector width: only op(B), the
// small operand, is packed (into panels of a tile's width that stay in cache), rows of A are
// broadcast straight from memory, C is read or written once per chunk of k, and a weight
// gradient's long k is cut into chunks. The multiply-adds in registers come from a `Tiles`
// class of one instruction set (engine/kernels/gemm_avx512.cpp, engine/kernels/gemm_avx2.cpp):
//   kRows, kVectors, kLanes    a tile of C is kRows x (kVectors * kLanes) floats
//   kNarrowRows                rows of a tile one vector wide, for a C at most kLanes wide
//   kBlockTiles                row tiles swept together across the panels (their A in L1)
//   multiply<TA, R, V>         a TileFn of R rows and V vectors (below)
//   transpose(...)             a kLanes x kLanes block turned around, for a transposed B
// Internal to those two files.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "engine/core/parallel.h"
#include "engine/kernels/axis_sums.h"
#include "engine/kernels/cache_line_vector.h"
#include "engine/kernels/scratch.h"

namespace vg::detail::tiled {

// C[R x lanes * V] = alpha * A[R x k] B[k x lanes * V] + beta * C, the last vector of each
// row cut to `tail` columns. Every element is one fma chain over k in order, started from
// `start` (the tile's columns of it, the same for every row) or from zero when it is null.
// With ta, A is stored transposed: row r of the tile, column p is a[p * lda + r].
using TileFn = void (*)(int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                        float alpha, float beta, const float* start, float* c, int64_t ldc,
                        int tail);

// Every size of tile a kind of Tiles needs, from its multiply<TA, R, V>: up to kRows rows and
// kVectors vectors (the remainders at C's bottom and right edges too), and one vector across
// up to kNarrowRows rows, where a C that narrow needs more rows for enough fma chains.
template <class Tiles>
class TileSizes {
 public:
  static TileFn of(bool ta, int rows, int vectors) {
    static constexpr auto plain = grid<false>(std::make_index_sequence<Tiles::kRows>());
    static constexpr auto transposed = grid<true>(std::make_index_sequence<Tiles::kRows>());
    return (ta ? transposed : plain)[rows - 1][vectors - 1];
  }
  static TileFn narrow(bool ta, int rows) {
    static constexpr auto plain = column<false>(std::make_index_sequence<Tiles::kNarrowRows>());
    static constexpr auto transposed = column<true>(std::make_index_sequence<Tiles::kNarrowRows>());
    return (ta ? transposed : plain)[rows - 1];
  }

 private:
  template <bool TA, int R, size_t... V>
  static constexpr std::array<TileFn, sizeof...(V)> row(std::index_sequence<V...>) {
    return {&Tiles::template multiply<TA, R, int(V) + 1>...};
  }
  template <bool TA, size_t... R>
  static constexpr auto grid(std::index_sequence<R...>) {
    return std::array<std::array<TileFn, Tiles::kVectors>, sizeof...(R)>{
        row<TA, int(R) + 1>(std::make_index_sequence<Tiles::kVectors>())...};
  }
  template <bool TA, size_t... R>
  static constexpr std::array<TileFn, sizeof...(R)> column(std::index_sequence<R...>) {
    return {&Tiles::template multiply<TA, int(R) + 1, 1>...};
  }
};

// The shapes the kernels are used for (measured against OpenBLAS 0.3.21 on AVX-512): enough
// rows to amortise packing op(B). Up to kMaxK (a linear layer's k) op(B) is packed whole and
// each block of rows sweeps all of it; a longer k would make that packed B outgrow L2, so its
// panels are packed and swept in groups of at most kGroupBytes, every row through one group
// before the next is packed. 512 KiB: the L2 of a Zen 3 core, half of a Zen 4's; on Zen 4,
// 256 KiB to 1 MiB ran 1024^3 within a few percent, and AVX2's tiles best from 512 KiB up.
constexpr int64_t kMinRows = 64, kMinCols = 16, kMinK = 8, kMaxK = 768;
constexpr int64_t kGroupBytes = 512 << 10;
// With A transposed (a weight gradient dY^T X, k = every token of the batch): C has a few
// dozen rows at least, and k is cut into chunks whose panel of B stays in L2; each chunk's
// sums are added to C in order, so the bits depend on the shape alone.
constexpr int64_t kMinRowsTransposed = 16, kMinKTransposed = 256, kChunkTransposed = 256;
// The L1 data cache of one core, the smallest among the x86 cores vitgrad runs on (32 KiB).
constexpr int64_t kL1Bytes = 32 << 10;
// One fma chain over many hundred terms is less accurate than OpenBLAS, which blocks k; so a
// chain covers at most kChunk terms, and each chunk's sums are added to C in order.
constexpr int64_t kChunk = 256;

// op(B) (k x n) as panels of a tile's width, each k x width and contiguous (the last one
// padded with zeros). Read in place, B's rows lie ldb floats apart, and at ldb = 256 or more
// the rows of one panel fall into a few cache sets and evict each other; a B at most one
// panel wide and not transposed is read in place, and so is any B that is not transposed
// when the caller asks (a short k, where those evictions cost little, or a weight gradient's
// chunk of wide panels, which streams from L2 packed or not).
template <class Tiles>
class PackedB {
 public:
  static constexpr int64_t kWidth = Tiles::kVectors * Tiles::kLanes;
  // Rows [p0, p0 + k) of op(B), panels [q0, q1), where op(B)[p][j] is b[j * ldb + p] when tb,
  // else b[p * ldb + j]. Shared among the engine's threads unless called inside a parallel
  // region.
  void pack(bool tb, int64_t p0, int64_t k, int64_t n, const float* b, int64_t ldb, int64_t q0 = 0,
            int64_t q1 = -1, bool any_stride_in_place = false) {
    const int64_t panels = (n + kWidth - 1) / kWidth;
    if (q1 < 0) q1 = panels;
    k_ = k;
    if (!tb && (ldb <= kWidth || any_stride_in_place)) {
      in_place_ = b + p0 * ldb;
      stride_ = ldb;
      return;
    }
    in_place_ = nullptr;
    stride_ = kWidth;
    kernels::grow(data_, panels * k * kWidth);
    if (tb)
      pack_transposed(p0, k, n, b, ldb, q0, q1);
    else
      parallel_for((q1 - q0) * k, 256, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t q = q0 + r / k, p = r % k;
          const int64_t j0 = q * kWidth, cols = std::min<int64_t>(kWidth, n - j0);
          float* to = data_.data() + (q * k + p) * kWidth;
          std::copy_n(b + (p0 + p) * ldb + j0, cols, to);
          std::fill(to + cols, to + kWidth, 0.0f);
        }
      });
  }
  const float* panel(int64_t q) const {
    return in_place_ ? in_place_ + q * kWidth : data_.data() + q * k_ * kWidth;
  }
  int64_t stride() const { return stride_; }

 private:
  // Blocks of kLanes x kLanes, transposed by the tiles' own instructions.
  void pack_transposed(int64_t p0, int64_t k, int64_t n, const float* b, int64_t ldb, int64_t q0,
                       int64_t q1) {
    constexpr int kLanes = Tiles::kLanes;
    const int64_t blocks = (k + kLanes - 1) / kLanes;
    parallel_for((q1 - q0) * blocks, 16, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t q = q0 + r / blocks, p = (r % blocks) * kLanes;
        const int64_t j0 = q * kWidth, cols = std::min<int64_t>(kWidth, n - j0);
        const int depth = int(std::min<int64_t>(kLanes, k - p));
        float* to = data_.data() + (q * k + p) * kWidth;
        int64_t j = 0;
        for (; j < cols; j += kLanes)
          Tiles::transpose(b + (j0 + j) * ldb + p0 + p, ldb,
                           int(std::min<int64_t>(kLanes, cols - j)), depth, to + j, kWidth);
        for (int d = 0; d < depth; ++d) std::fill(to + d * kWidth + j, to + (d + 1) * kWidth, 0.0f);
      }
    });
  }

  kernels::CacheLineVector<float> data_;  // grown once per shape, then reused
  const float* in_place_ = nullptr;
  int64_t k_ = 0, stride_ = 0;
};

struct NoBlockHook {
  void operator()(int64_t, int64_t) const {}
};

// Rows [i0, i1) and panels [q0, q1) of C against rows [p0, p0 + k) of the packed op(B), and
// after_block(ib, ie) once a block of rows is done, while its rows of A are in cache.
template <class Tiles, bool TA, class AfterBlock = NoBlockHook>
void part_of_c(int64_t i0, int64_t i1, int64_t q0, int64_t q1, int64_t n, int64_t k, float alpha,
               const float* a, int64_t lda, const PackedB<Tiles>& b, int64_t p0, float beta,
               const float* start, float* c, int64_t ldc, AfterBlock after_block = {}) {
  constexpr int64_t kRows = Tiles::kRows, kLanes = Tiles::kLanes, kWidth = PackedB<Tiles>::kWidth;
  const int64_t block_rows = Tiles::kBlockTiles * kRows;
  for (int64_t ib = i0; ib < i1; ib += block_rows) {
    const int64_t ie = std::min(i1, ib + block_rows);
    for (int64_t q = q0; q < q1; ++q) {
      const int64_t j = q * kWidth, cols = std::min<int64_t>(kWidth, n - j);
      const int vectors = int((cols + kLanes - 1) / kLanes);
      const int tail = int(cols - (vectors - 1) * kLanes);
      for (int64_t i = ib; i < ie; i += kRows) {
        const int rows = int(std::min<int64_t>(kRows, ie - i));
        TileSizes<Tiles>::of(TA, rows, vectors)(
            k, TA ? a + i : a + i * lda, lda, b.panel(q) + p0 * b.stride(), b.stride(), alpha, beta,
            start ? start + j : nullptr, c + i * ldc + j, ldc, tail);
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
  // Rows [r0, r1) of columns [i0, i1) of x (rows ld apart), rows that lie in one group of
  // kColumnSumRows (a chunk of gemm_transposed_a's k). Blocks of columns are summed in registers
  // down the rows, each column's additions in row order as a loop over rows adding into `parts`
  // would do them, but without storing and reloading the sums every row.
  void add(const float* x, int64_t ld, int64_t r0, int64_t r1, int64_t i0, int64_t i1) const {
    constexpr int64_t kBlock = 16;
    double* row = parts + r0 / kernels::kColumnSumRows * width;
    int64_t i = i0;
    for (; i + kBlock <= i1; i += kBlock) {
      double sum[kBlock];
      for (int64_t c = 0; c < kBlock; ++c) sum[c] = row[i + c];
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t c = 0; c < kBlock; ++c) sum[c] += double(x[r * ld + i + c]);
      for (int64_t c = 0; c < kBlock; ++c) row[i + c] = sum[c];
    }
    for (; i < i1; ++i) {
      double sum = row[i];
      for (int64_t r = r0; r < r1; ++r) sum += double(x[r * ld + i]);
      row[i] = sum;
    }
  }
};

// Rows [i0, i1) of op(A) = A^T over `terms` rows of A from `a` (A's columns i0..i1), as rows of
// `terms` floats, `ld` >= terms rounded up to the tiles' lanes apart (the transposes write whole
// blocks), 16 x 16 (AVX2: 8 x 8) at a time by the tiles' own transposes.
template <class Tiles>
void transposed_rows_of_a(const float* a, int64_t lda, int64_t i0, int64_t i1, int64_t terms,
                          float* out, int64_t ld) {
  constexpr int64_t kLanes = Tiles::kLanes;
  for (int64_t l = 0; l < terms; l += kLanes)
    for (int64_t i = i0; i < i1; i += kLanes)
      Tiles::transpose(a + l * lda + i, lda, int(std::min(kLanes, terms - l)),
                       int(std::min(kLanes, i1 - i)), out + (i - i0) * ld + l, ld);
}

// C = alpha A^T B + beta C, k long: k in chunks, each chunk's sums added to C in order. A
// chunk of one of B's panels, packed, fits in L1 where the panels are narrow (AVX2's 16 columns,
// 16 KiB) and stays there while the tiles of C's rows sweep it: B is packed, and the threads
// share C's panels where they split evenly, so each packs only its own. A wide panel's chunk
// (AVX-512's 64 columns, 64 KiB) does not fit, and each tile streams it from L2 packed or not:
// the threads share C's rows, so each reads only its own columns of A (sharing the panels has
// every thread read all of A: slower from dim 128 up, docs/fast.md), unless the row tiles split
// unevenly and the panels do not. With one such panel B is read in place, since a copy per chunk
// on every thread cost more than it saved (at dim 64, turning A into rows as below cost 3-5% as
// well). With more, each tile fetched one line of A per term, and the same lines again for every
// panel: there each thread turns its columns of the chunk of A into rows (transposed_rows_of_a)
// and packs B's chunk, and the tiles read both in order (on an Intel Xeon of family 6 model 207,
// dim 192's qkv and fc2 weight gradients went from about 1.25 and 1.6 times OpenBLAS's time to
// 1.1). Either way each element is the same fma chain. With `sums`, the thread that alone reads
// those columns of dY sums them, and where all threads read them each sums a share (one thread
// summing them all kept the other waiting: dim 64's steps took about 2% longer on an AMD EPYC
// Zen 3).
template <class Tiles>
void gemm_transposed_a(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                       const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
                       const ColumnSums* sums) {
  static_assert(kernels::kColumnSumRows % kChunkTransposed == 0, "a chunk of k in one sum");
  constexpr int64_t kRows = Tiles::kRows, kLanes = Tiles::kLanes, kWidth = PackedB<Tiles>::kWidth;
  constexpr bool kPackB = kChunkTransposed * kWidth * int64_t(sizeof(float)) <= kL1Bytes;
  const int64_t panels = (n + kWidth - 1) / kWidth, tiles = (m + kRows - 1) / kRows;
  const int64_t threads = num_threads();
  const bool panels_split_evenly = panels % threads == 0 || panels >= 4 * threads;
  // Unevenly: row tiles the threads do not divide, few enough that one more is over 1.5%.
  const bool rows_split_evenly = tiles % threads == 0 || tiles >= 64 * threads;
  const bool by_panels = panels_split_evenly && (kPackB || !rows_split_evenly);
  const bool a_as_rows = !kPackB && !by_panels && panels >= 2;
  constexpr int64_t kRowLd = (kChunkTransposed + kLanes - 1) / kLanes * kLanes;  // A's as rows
  parallel_for(by_panels ? panels : tiles, 1, [&](int64_t t0, int64_t t1) {
    const int64_t i0 = by_panels ? 0 : t0 * kRows, i1 = by_panels ? m : std::min(m, t1 * kRows);
    const int64_t q0 = by_panels ? t0 : 0, q1 = by_panels ? t1 : panels;
    // Where every thread reads all of the summed operand, each sums its share of its columns
    // (whole blocks of C's rows where they are dY's), so that none waits for one that sums.
    int64_t lo = 0, hi = INT64_MAX;
    if (sums && sums->of_b != by_panels) {
      const int64_t parts = by_panels ? panels : tiles, width = sums->of_b ? n : m;
      const int64_t align = sums->of_b ? kWidth : Tiles::kBlockTiles * kRows;
      auto edge = [&](int64_t t) { return t == parts ? width : width * t / parts / align * align; };
      lo = edge(t0);
      hi = edge(t1);
    }
    thread_local PackedB<Tiles> chunk;
    thread_local kernels::CacheLineVector<float> rows_of_a;  // grown once per shape, then reused
    if (a_as_rows) kernels::grow(rows_of_a, (i1 - i0) * kRowLd);
    for (int64_t p = 0; p < k; p += kChunkTransposed) {
      const int64_t rows = std::min(kChunkTransposed, k - p);
      chunk.pack(false, p, rows, n, b, ldb, q0, q1, !kPackB && !a_as_rows);
      // dY as A: each block of its columns summed as soon as the block's products are done.
      auto sum_block = [&](int64_t ib, int64_t ie) {
        if (sums && !sums->of_b && ib >= lo && ib < hi) sums->add(a, lda, p, p + rows, ib, ie);
      };
      if (a_as_rows) {  // rows relative to i0, the sums' too
        transposed_rows_of_a<Tiles>(a + p * lda, lda, i0, i1, rows, rows_of_a.data(), kRowLd);
        part_of_c<Tiles, false>(0, i1 - i0, q0, q1, n, rows, alpha, rows_of_a.data(), kRowLd, chunk,
                                0, p == 0 ? beta : 1.0f, nullptr, c + i0 * ldc, ldc,
                                [&](int64_t ib, int64_t ie) { sum_block(i0 + ib, i0 + ie); });
      } else {
        part_of_c<Tiles, true>(i0, i1, q0, q1, n, rows, alpha, a + p * lda, lda, chunk, 0,
                               p == 0 ? beta : 1.0f, nullptr, c, ldc, sum_block);
      }
      if (sums && sums->of_b)
        sums->add(b, ldb, p, p + rows, std::max(lo, q0 * kWidth), std::min({hi, n, q1 * kWidth}));
    }
  });
}

// C (m x n, rows ldc apart) = ct^T for ct (n x m): a product computed as C^T = B^T A.
inline void transposed_into(const float* ct, int64_t m, int64_t n, float* c, int64_t ldc) {
  parallel_for(m, std::max<int64_t>(1, 16384 / n), [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i)
      for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = ct[j * m + i];
  });
}

// The case of A transposed, with the sums of A's columns where `sums_parts` is given.
template <class Tiles>
bool transposed_a_product(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                          const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
                          double* sums_parts) {
  if (m < kMinRowsTransposed || n < kMinCols || k < kMinKTransposed) return false;
  if (beta == 0.0f && ldb > PackedB<Tiles>::kWidth && lda < ldb && n >= kMinRowsTransposed &&
      m >= kMinCols) {
    // B would be the wider operand: packed chunk by chunk (narrow panels), or read in place
    // with its rows far apart (wide panels: at fc2's weight gradient, (192 x 6400) times
    // (6400 x 768), a panel's rows fall into a few cache sets and the product ran at 0.6 of
    // this speed). C^T = B^T A has the narrower A in B's place instead. Each element is the
    // same fma chain (the products commute), so C gets the same bits.
    thread_local kernels::CacheLineVector<float> c_transposed;  // grown once per shape, then reused
    kernels::grow(c_transposed, n * m);
    const ColumnSums sums{true, m, sums_parts};
    gemm_transposed_a<Tiles>(n, m, k, alpha, b, ldb, a, lda, 0.0f, c_transposed.data(), m,
                             sums_parts ? &sums : nullptr);
    transposed_into(c_transposed.data(), m, n, c, ldc);
    return true;
  }
  const ColumnSums sums{false, m, sums_parts};
  gemm_transposed_a<Tiles>(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc,
                           sums_parts ? &sums : nullptr);
  return true;
}

// gemm_simd on these tiles (engine/kernels/gemm_simd.h), once they have been chosen.
template <class Tiles>
bool product(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
             int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
             const float* start) {
  if (ta)
    return !tb && !start &&
           transposed_a_product<Tiles>(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nullptr);
  if (m < kMinRows || n < kMinCols || k < kMinK) return false;
  constexpr int64_t kRows = Tiles::kRows, kWidth = PackedB<Tiles>::kWidth;
  const int64_t panels = (n + kWidth - 1) / kWidth, tiles = (m + kRows - 1) / kRows;
  const int64_t group =
      k <= kMaxK ? panels
                 : std::max<int64_t>(1, kGroupBytes / (k * kWidth * int64_t(sizeof(float))));
  thread_local PackedB<Tiles> packed_here;
  // Named inside the lambda, a thread_local is each thread's own: the workers need this one.
  const PackedB<Tiles>& packed = packed_here;
  // Row tiles shared among threads, each part at least ~2^17 multiply-adds.
  const int64_t grain =
      std::max<int64_t>(1, (int64_t(1) << 17) / (kRows * std::min(n, group * kWidth) * k));
  // Where k has several chunks, a block of rows goes through all of them before the next
  // block starts, so its part of C stays in cache from one chunk to the next; a sweep of
  // every row per chunk would send C to memory and back once per chunk. Each element's chunks
  // are added in order whatever the grouping, so the bits are those of any other route.
  const int64_t block_rows = Tiles::kBlockTiles * kRows;
  for (int64_t q0 = 0; q0 < panels; q0 += group) {
    const int64_t q1 = std::min(panels, q0 + group);
    packed_here.pack(tb, 0, k, n, b, ldb, q0, q1);
    parallel_for(tiles, grain, [&](int64_t t0, int64_t t1) {
      const int64_t i1 = std::min(m, t1 * kRows);
      for (int64_t ib = t0 * kRows; ib < i1; ib += block_rows)
        for (int64_t p = 0; p < k; p += kChunk)  // see kChunk
          part_of_c<Tiles, false>(ib, std::min(i1, ib + block_rows), q0, q1, n,
                                  std::min(kChunk, k - p), alpha, a + p, lda, packed, p,
                                  p == 0 ? beta : 1.0f, p == 0 ? start : nullptr, c, ldc);
    });
  }
  return true;
}

// gemm_simd_tn_sums on these tiles.
template <class Tiles>
bool product_tn_sums(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c,
                     float* sums) {
  const int64_t chunks = (k + kernels::kColumnSumRows - 1) / kernels::kColumnSumRows;
  thread_local std::vector<double> parts;  // the caller's, shared by the workers
  parts.assign(chunks * m, 0.0);
  if (!transposed_a_product<Tiles>(m, n, k, 1.0f, a, m, b, n, 0.0f, c, n, parts.data()))
    return false;
  kernels::add_column_chunks(parts.data(), chunks, m, sums);
  return true;
}

// A small product on the calling thread (gemm_simd_small), with `start` as product takes it.
template <class Tiles>
void small_product(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                   int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
                   const float* start) {
  constexpr int64_t kLanes = Tiles::kLanes, kWidth = PackedB<Tiles>::kWidth;
  thread_local PackedB<Tiles> packed_here;
  const PackedB<Tiles>& packed = packed_here;
  const int64_t panels = (n + kWidth - 1) / kWidth;
  for (int64_t p = 0; p < k; p += kChunk) {  // see kChunk
    const int64_t depth = std::min(kChunk, k - p);
    const float beta_here = p == 0 ? beta : 1.0f;
    const float* start_here = p == 0 ? start : nullptr;
    packed_here.pack(tb, p, depth, n, b, ldb, 0, panels, true);
    if (n <= kLanes) {  // one vector across: taller tiles, for enough fma chains
      for (int64_t i = 0; i < m; i += Tiles::kNarrowRows) {
        const int rows = int(std::min<int64_t>(Tiles::kNarrowRows, m - i));
        TileSizes<Tiles>::narrow(ta, rows)(depth, ta ? a + p * lda + i : a + i * lda + p, lda,
                                           packed.panel(0), packed.stride(), alpha, beta_here,
                                           start_here, c + i * ldc, ldc, int(n));
      }
    } else if (ta)
      part_of_c<Tiles, true>(0, m, 0, panels, n, depth, alpha, a + p * lda, lda, packed, 0,
                             beta_here, start_here, c, ldc);
    else
      part_of_c<Tiles, false>(0, m, 0, panels, n, depth, alpha, a + p, lda, packed, 0, beta_here,
                              start_here, c, ldc);
  }
}

}  // namespace vg::detail::tiled
