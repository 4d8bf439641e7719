// Float matrix products with bfloat16 operands and float sums: the products of `--amp bf16`
// (engine/kernels/matmul_precision.h). Both operands are rounded to bf16 (round to nearest,
// ties to even; engine/kernels/bf16.h) as they are packed, the products of two bf16 are exact
// in float, and they are summed in float, as PyTorch's CPU autocast and oneDNN do.
//
// op(A) is packed as pairs of consecutive k terms in 32-bit words and op(B) as panels of up to
// 64 columns, each row of a panel one pair of k rows, interleaved: the layout in which one
// vdpbf16ps multiplies a broadcast pair of A by 16 columns' pairs of B and adds both products
// to 16 float sums; AMX tiles read the same panels and rows of A padded to whole tiles
// (engine/kernels/bf16_gemm_amx.cpp). Each element of C is one chain of such steps over each
// chunk of k, the chunks added to C in order, so the bits depend on the shape and the kind of
// tiles alone, not on the threads. On a CPU with AMX, products of fewer than 2^18
// multiply-adds (an attention head's) run on float fmas, their operands rounded to bf16.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "engine/core/storage.h"
#include "engine/kernels/made_rows.h"

namespace vg {

// The loops a product runs on: the best the CPU has for its size (bf16_hardware(), and float
// fmas for a small product on an AMX CPU), or, for tests, a named kind: AVX512-BF16, the AMX
// tiles, a plain C++ model of the AMX tiles on their packed layout, or float fmas on operands
// rounded to bf16 (engine/kernels/bf16_gemm_fma.cpp). The model runs on any CPU, and the fmas
// on any with AVX2 and FMA, bf16 units or not: the tests of a CPU without them use the two
// (and use_bf16_stand_in, engine/kernels/matmul_precision.h, makes `best` one of them).
enum class Bf16Tiles { best, avx512_bf16, amx, amx_model, fma };

// Below this many multiply-adds `best` is float fmas where the CPU has AMX: the tiles' fixed
// costs (their configuration, rows padded to 32 and pairs to 16, blocks at C's edges through a
// buffer) outweigh their speed. On an Intel Xeon of family 6 model 207, an attention head's
// products ran faster on the fmas (bf16_gemm_fma.cpp) than on the tiles at head dims 16 and 32
// (50 x 50 x 32 = 80,000) and 64 (160,000: dim 192 depth 12's attention 73 -> 60 ms a step);
// at 128 (320,000) the two were level.
inline constexpr int64_t kAmxMinMacs = int64_t(1) << 18;

// A float matrix of rows x cols rounded to bf16 as a product reads it, in one of two layouts:
// - by rows (row_pairs false): row i's pairs (bf16_pair of its values 2p and 2p + 1, the second
//   zero past an odd cols) at words()[i * ld() ...], ld() = pairs(), as a product packs op(A);
// - by pairs of rows (row_pairs true): word (p, j) = bf16_pair(x[2p][j], x[2p + 1][j]) (the
//   second zero past an odd rows) at words()[p * ld() + j], ld() = cols rounded up to 16 (the
//   words between zero), as a product packs op(B) = X of a weight gradient dY^T X. The
//   AVX512-BF16 tiles read such words where they lie: nothing to pack, once per thread, in
//   every weight gradient.
// What a linear's forward (by pairs of rows), GELU's gradient pass (the same) and GRN's values
// (by rows) leave for a weight gradient: half the bytes of the floats, and no need to make
// them again. Its words live in the tensors' memory (engine/core/storage.h), so memory_stats()
// counts them and each step reuses the last one's buffer.
struct Bf16Rows {
  int64_t rows = 0, cols = 0;
  bool row_pairs = false;
  std::shared_ptr<Storage> storage;
  int64_t pairs() const { return (cols + 1) / 2; }
  // Words from one row (or pair of rows) to the next, and how many rows of words there are.
  int64_t ld() const { return row_pairs ? row_pairs_ld(cols) : pairs(); }
  // The words from one pair of rows to the next, by pairs of rows: the tiles read 16 at a time.
  static int64_t row_pairs_ld(int64_t cols) { return (cols + 15) / 16 * 16; }
  int64_t word_rows() const { return row_pairs ? (rows + 1) / 2 : rows; }
  uint32_t* words() const { return static_cast<uint32_t*>(storage->data()); }
};

// Bf16Rows of rows x cols in the given layout, whose words are yet to be written.
inline Bf16Rows make_bf16_rows(int64_t rows, int64_t cols, bool row_pairs = false) {
  Bf16Rows out{rows, cols, row_pairs, nullptr};
  out.storage = std::make_shared<Storage>(size_t(out.word_rows() * out.ld()) * sizeof(uint32_t));
  return out;
}

// Row-major C (m x n) = alpha * op(A) op(B) + beta * C, op = transpose where ta / tb, with
// op(A) and op(B) rounded to bf16. With `start` (n values, e.g. a bias) each sum starts from
// start[j] (and beta is ignored: C is not read). Splits large products over the engine's
// threads; inside a parallel region it runs on the calling thread. Needs a CPU with
// AVX512-BF16 (bf16_hardware() != none), and AMX for Bf16Tiles::amx, except for the model and
// fma kinds above; vg::Error otherwise.
void gemm_bf16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
               int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
               const float* start = nullptr, Bf16Tiles tiles = Bf16Tiles::best);

// gemm_bf16 with one operand made a block of rows at a time (engine/kernels/made_rows.h),
// with the bits of the same product on the stored matrix:
// C (a.rows x n) = A B^T + start, B (n x a.cols), rows ldb apart: a convolution's forward;
void gemm_bf16_made_a(const MadeRows& a, int64_t n, const float* b, int64_t ldb, float* c,
                      int64_t ldc, const float* start = nullptr, Bf16Tiles tiles = Bf16Tiles::best,
                      const RowsDone* done = nullptr);
// The same forward with A already rounded to bf16 by rows (Bf16Rows, row_pairs false): its
// words are the packer's, so the product has the bits of the one on the floats they round.
void gemm_bf16_rounded_a(const Bf16Rows& a, int64_t n, const float* b, int64_t ldb, float* c,
                         int64_t ldc, const float* start = nullptr,
                         Bf16Tiles tiles = Bf16Tiles::best, const RowsDone* done = nullptr);
// C (m x b.cols) = A^T B, A (b.rows x m), rows lda apart: its weight gradient.
void gemm_bf16_made_b(int64_t m, const float* a, int64_t lda, const MadeRows& b, float* c,
                      int64_t ldc, Bf16Tiles tiles = Bf16Tiles::best);

// C (m x n) = A B for row-major A (m x k) and B (k x n), as gemm_bf16(false, false, ...) with
// lda = k and ldb = ldc = n and with its bits, each block of C's rows handed to done as the
// product finishes it instead of being stored: a linear's input gradient passed through the
// gradient of the map before it, in cache.
void gemm_bf16_then(int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                    const RowsDone& done, Bf16Tiles tiles = Bf16Tiles::best);

// C (m x n) = A B^T + start for row-major A (m x k) and B (n x k), as gemm_bf16(false, true,
// ...) with lda = ldb = k, and into `kept` A rounded to bf16 by pairs of rows: the words the
// product packed, regrouped for the weight gradient that reads them.
void gemm_bf16_keeping_a(int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                         const float* start, float* c, Bf16Rows& kept,
                         Bf16Tiles tiles = Bf16Tiles::best, const RowsDone* done = nullptr);

// C (m x n) = A^T B for A (k x m) and B (k x n), all contiguous, as gemm_bf16(true, false, ...),
// and into sums (m) the sums of A's columns with the bits of kernels::sum_middle_axis(a, sums,
// 1, k, m): a weight gradient dY^T X and its bias gradient, taken as dY is packed for the
// product.
void gemm_bf16_tn_sums(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c,
                       float* sums, Bf16Tiles tiles = Bf16Tiles::best);
// The same with B kept in bf16 (b.rows = k, b.cols = n, in either layout), with the bits of
// gemm_bf16_tn_sums on the floats it was rounded from.
void gemm_bf16_tn_sums(int64_t m, const float* a, const Bf16Rows& b, float* c, float* sums,
                       Bf16Tiles tiles = Bf16Tiles::best);

// The same product as plain loops: operands rounded with to_bf16, the products summed in
// double. What the tests compare gemm_bf16 against.
void gemm_bf16_reference(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                         const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                         float* c, int64_t ldc, const float* start = nullptr);

}  // namespace vg
