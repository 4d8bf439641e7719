// The operands of a bf16 product once packed, and the tile loops that multiply them (one per
// kind of bf16 unit). Internal to engine/kernels/bf16_gemm.cpp and its tile kernels, and to
// the kernels that write a kept bf16 operand themselves (gelu_slope.cpp,
// global_response_norm.cpp).
#pragma once

#include <cstdint>

#include "engine/kernels/cache_line_vector.h"

namespace vg::detail {

// The buffers the packers fill: bf16 pairs as words, and float rows made on demand.
// (Each 64-byte row of a packed operand on one cache line: kernels/cache_line_vector.h.)
using PackedWords = kernels::CacheLineVector<uint32_t>;
using PackedFloats = kernels::CacheLineVector<float>;

// op(A) and op(B) rounded to bf16 and packed as pairs of consecutive k terms (bf16_pair):
// `pairs` = ceil(k / 2), the last pair's second term zero when k is odd.
struct Bf16Operands {
  // Word (i, p) of op(A), the pair (op(A)[i][2p], op(A)[i][2p + 1]), is a[i * a_row + p * a_pair]:
  // a_pair = 1 when A was not transposed (each row's pairs contiguous), a_row = 1 when it was.
  const uint32_t* a = nullptr;
  int64_t a_row = 0, a_pair = 0;
  // op(B) in panels of panel_cols columns (the last zero-padded): word (p, j) of panel q, the
  // pair (op(B)[2p][q * panel_cols + j], op(B)[2p + 1][...]), is b[(q * pairs + p) * panel_cols +
  // j].
  const uint32_t* b = nullptr;
  int64_t panel_cols = 0;
  int64_t pairs = 0;
  // Or op(B) read where it lies, not packed (a weight gradient's X kept by pairs of rows,
  // bf16_gemm.h Bf16Rows): word (p, j) of panel q at b[q * panel_cols + p * b_ld + j], the
  // columns past n read but their sums never stored. Zero: packed, as above.
  int64_t b_ld = 0;
  // Panel q's first word from pair p, and the words between its pair rows.
  const uint32_t* panel(int64_t q, int64_t p) const {
    return b_ld ? b + q * panel_cols + p * b_ld : b + (q * pairs + p) * panel_cols;
  }
  int64_t panel_ld() const { return b_ld ? b_ld : panel_cols; }
  // Whole blocks of C written with streaming stores, past the caches: for a C larger than L2
  // that no later step of the product reads, they save the read of each line before it is
  // written. The AMX loops honour it; C's rows must then start on 64-byte boundaries.
  bool stream_c = false;
};

// The words of packed operands. Each function here runs AVX-512 loops where the CPU has
// AVX-512 (bf16_words_avx512.cpp) and plain loops elsewhere (plain::, below), which give the
// same words and sums: so the packers, and the plain model of the AMX tiles behind them, run
// in the tests on any CPU, also where --amp bf16 itself is refused for want of bf16 units.
//
// bf16_pair(x[2p], x[2p + 1]) into out[p] for the pairs of a row of k floats (the last pair's
// second term zero when k is odd).
void bf16_pairs_of_row(const float* x, int64_t k, uint32_t* out);
// The same for `rows` rows of k <= 32 floats, ld apart, into out[i * out_ld ..].
void bf16_pairs_of_short_rows(const float* x, int64_t ld, int64_t rows, int64_t k, uint32_t* out,
                              int64_t out_ld);
// bf16_pair(first[i], second[i]) into out[i] for i < count; second null: zeros.
void bf16_pairs_of_rows(const float* first, const float* second, int64_t count, uint32_t* out);
// The same from two rows already in bf16 pairs: count values, from the first value of word 0,
// of each row (the halves of row `first`'s words low, `second`'s high; second null: zeros).
void bf16_pairs_of_kept_rows(const uint32_t* first, const uint32_t* second, int64_t count,
                             uint32_t* out);
// interleave_rows (below) on the calling thread, also adding column i's terms to sums[i] in
// double in the order of k: a column's sum taken as its terms are packed.
void interleave_rows_summing(int64_t k, int64_t count, const float* x, int64_t ld, uint32_t* out,
                             int64_t out_ld, double* sums);

// Rows x cols floats, ld apart, each rounded to bf16 and kept as the float it stands for (its
// low 16 bits zero), into out, out_ld apart: the operands of bf16_product_fma.
void bf16_round_rows(const float* x, int64_t ld, int64_t rows, int64_t cols, float* out,
                     int64_t out_ld);
// out[c * out_ld + r] = in[r * in_ld + c] for a rows x cols matrix of 32-bit words; nothing
// else of out is written.
void transpose_words(const uint32_t* in, int64_t rows, int64_t cols, int64_t in_ld, uint32_t* out,
                     int64_t out_ld);

// The functions above as plain loops, which run on any CPU (bf16_words.cpp); the tests hold the
// AVX-512 loops to them word for word.
namespace plain {
void pairs_of_row(const float* x, int64_t k, uint32_t* out);
void pairs_of_short_rows(const float* x, int64_t ld, int64_t rows, int64_t k, uint32_t* out,
                         int64_t out_ld);
void pairs_of_rows(const float* first, const float* second, int64_t count, uint32_t* out);
void pairs_of_kept_rows(const uint32_t* first, const uint32_t* second, int64_t count,
                        uint32_t* out);
void interleave_rows_summing(int64_t k, int64_t count, const float* x, int64_t ld, uint32_t* out,
                             int64_t out_ld, double* sums);
void round_rows(const float* x, int64_t ld, int64_t rows, int64_t cols, float* out, int64_t out_ld);
void transpose_words(const uint32_t* in, int64_t rows, int64_t cols, int64_t in_ld, uint32_t* out,
                     int64_t out_ld);
}  // namespace plain

// The packers that lay float operands out as Bf16Operands (engine/kernels/bf16_pack.cpp);
// each splits its work over the engine's threads unless called inside a parallel region.
// The pairs of `rows` rows of k floats, ld apart, into out, out_ld >= (k + 1) / 2 words a
// row, the words past the pairs zero.
void pairs_of_rows(int64_t rows, int64_t k, const float* x, int64_t ld, uint32_t* out,
                   int64_t out_ld);
// Two rows of `count` floats (second null: zeros) as one row of words by pairs of rows
// (bf16_gemm.h Bf16Rows::row_pairs): bf16_pairs_of_rows into out[0, count), zeros up to `ld`.
void bf16_pair_row(const float* first, const float* second, int64_t count, int64_t ld,
                   uint32_t* out);
// Pair p of `count` columns: out[p * out_ld + i] = (x[2p * ld + i], x[(2p + 1) * ld + i]).
void interleave_rows(int64_t k, int64_t count, const float* x, int64_t ld, uint32_t* out,
                     int64_t out_ld);
// out[i * stride + p] = by_pairs[p * rows + i] (a chunk of a transposed A, as interleave_rows
// packs it, with each row of op(A) contiguous, as the AMX tiles read it), zeros up to `stride`
// words a row and `padded_rows` rows.
void pairs_to_rows(const uint32_t* by_pairs, int64_t pairs, int64_t rows, uint32_t* out,
                   int64_t stride, int64_t padded_rows);
// op(B) (k x n, transposed where tb) as panels of `width` columns with `stride` pair rows
// each, the padding zero.
void pack_b(bool tb, int64_t k, int64_t n, const float* b, int64_t ldb, int64_t width,
            int64_t stride, uint32_t* out);

// pack_b(false, ...) for a B of k x n values kept in bf16 (engine/kernels/bf16_gemm.h
// Bf16Rows): by rows (row r's pairs at words[r * ld ...]) or, with `row_pairs`, by pairs of rows
// (pair p's words at words[p * ld ...]: copied, nothing regrouped).
void pack_kept_b(int64_t k, int64_t n, const uint32_t* words, int64_t ld, bool row_pairs,
                 int64_t width, int64_t stride, uint32_t* out);

// Rows [i0, i1) of C (n columns) = alpha * (start + sum over pairs [p0, p1)) + beta * C, with
// `start` (n values) or zero, and C not read when beta = 0. Every element is one chain over
// the pairs in order.
void bf16_rows_avx512(const Bf16Operands& ops, int64_t i0, int64_t i1, int64_t n, int64_t p0,
                      int64_t p1, float alpha, float beta, const float* start, float* c,
                      int64_t ldc);

// The same with AMX tiles; needs the padded layout that file describes.
void bf16_rows_amx(const Bf16Operands& ops, int64_t i0, int64_t i1, int64_t n, int64_t p0,
                   int64_t p1, float alpha, float beta, const float* start, float* c, int64_t ldc);
// bf16_rows_amx step by step in plain C++ (any CPU): the reference of the AMX tiles.
void bf16_rows_amx_model(const Bf16Operands& ops, int64_t i0, int64_t i1, int64_t n, int64_t p0,
                         int64_t p1, float alpha, float beta, const float* start, float* c,
                         int64_t ldc);

// Row-major C (m x n) = alpha * (start + op(A) op(B)) + beta * C, start optional, with op(A)
// and op(B) rounded to bf16 and the products summed by float fmas (engine/kernels/gemm_simd.h):
// Bf16Tiles::fma, on the calling thread, on the fp32 kernel's AVX-512 or AVX2 tiles (the same
// bits).
void bf16_product_fma(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                      const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                      float* c, int64_t ldc, const float* start);

}  // namespace vg::detail
