// vitgrad's own float products for the shapes a small ViT is made of: many rows (tokens times
// images), a short inner dimension (the embedding width, 64 to a few hundred) and a few
// hundred columns. OpenBLAS packs both operands for every call; at k = 64 that packing, and
// the memset or copy of C around it, cost about as much as the multiply-adds. Here only
// op(B), the small operand, is packed, rows of A are broadcast straight from memory, and C
// is read or written once per chunk of k (engine/kernels/gemm_tiled.h). The tiles are
// AVX-512's (gemm_avx512.cpp) where the CPU has it, else AVX2's with FMA (gemm_avx2.cpp),
// chosen at run time; with neither, or with VITGRAD_GEMM=blas, OpenBLAS does every product.
// Internal to the engine's kernels (blas.cpp, and bf16_gemm_fma.cpp for the small products).
#pragma once

#include <cstdint>

#include "engine/kernels/made_rows.h"

namespace vg::detail {

enum class FloatTiles { none, avx2, avx512 };

// The tiles in use: the widest the CPU has, unless VITGRAD_GEMM says "blas" (none) or "avx2".
FloatTiles float_tiles();
// For tests: the given tiles from now on (none: OpenBLAS). An error if the CPU lacks them.
void use_float_tiles(FloatTiles tiles);
const char* float_tiles_name(FloatTiles tiles);

// Row-major C (m x n) = alpha * op(A) op(B) + beta * C, computed here when there are tiles and
// the shape is one they are faster for; returns false (and touches nothing) otherwise. Two
// cases: A not transposed (a linear layer's forward and input gradient, and any large
// product; beyond a linear layer's k, op(B) is packed in groups of panels that fit in L2),
// and A transposed, B not, with a long k (a weight gradient; with beta = 0 it computes C^T = B^T A
// instead when B is the wider operand, so that the narrower one is packed). Each element of C is a
// fused multiply-add chain over each chunk of 256 terms of k, the chunks added to C in order, so
// the bits depend on the shape alone, not on how rows are shared among threads, which operand is
// packed or which kind of tiles ran. With `start` (n values, e.g. a bias; first case only) each
// chain starts from start[j] instead of zero, and alpha then scales the whole chain.
bool gemm_simd(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
               int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
               const float* start = nullptr);

// gemm_simd(true, false, m, n, k, 1, a, m, b, n, 0, c, n) for contiguous operands, and into
// sums (m) the sums of A's columns with the bits of kernels::sum_middle_axis(a, sums, 1, k, m),
// each chunk of A summed right after its products have read it, from cache: a weight gradient
// dY^T X and its bias gradient. False (touching nothing) where gemm_simd would be.
bool gemm_simd_tn_sums(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c,
                       float* sums);

// The same product for a small matrix that one thread computes whole (one attention head, or
// one block of a product that the two cases above do not take, engine/kernels/blas.cpp):
// no size bounds, the products on the calling thread; op(B) is read in place when it is not
// transposed, and packed in transposed blocks when it is. Each element is an fma chain over
// each chunk of 256 terms of k, as above. False (touching nothing) without tiles, with both
// operands transposed, or for an empty product.
bool gemm_simd_small(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                     int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

// The same products with one operand made a block of rows at a time (engine/kernels/made_rows.h,
// engine/kernels/gemm_tiled_made.h), with the bits of gemm_simd on the stored matrix: C (a.rows x
// n) = A B^T + start in every row (a convolution's forward, start its bias or null), and C (m x
// b.cols) = A^T B for A (b.rows x m) stored (its weight gradient). False (touching nothing) without
// tiles or for a shape they do not take so; gemm_simd_makes_rows says beforehand whether both
// would take a made matrix of rows x cols and a Y n wide.
bool gemm_simd_makes_rows(int64_t rows, int64_t cols, int64_t n);
// Whether the tiles run C (m x n), k deep, a block of C's rows at a time with op(B) packed
// whole: the shapes gemm_simd_made_a (A made, m x k) and gemm_simd_then (below) take.
bool gemm_simd_by_row_blocks(int64_t m, int64_t n, int64_t k);
bool gemm_simd_made_a(const MadeRows& a, int64_t n, const float* b, const float* start, float* c);
bool gemm_simd_tn_made(int64_t m, const float* a, const MadeRows& b, float* c);

// C (m x n) = A B for row-major A (m x k) and B (k x n), as gemm_simd(false, false, ...) with
// lda = k and ldb = ldc = n and with its bits, each block of C's rows handed to done as the
// tiles finish it, from a buffer of the thread that made it, instead of being stored: a
// linear's input gradient on its way through the gradient of the map before it. False
// (touching nothing) without tiles or for a shape they do not take so (gemm_simd_by_row_blocks).
bool gemm_simd_then(int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                    const RowsDone& done);

// One kind of tiles' products, which assume the CPU has its instructions: gemm_simd's,
// gemm_simd_tn_sums', gemm_simd_small's without its checks, with `start` as gemm_simd takes it
// (m, n and k positive, not both operands transposed), and the made ones above. The small
// products also sum small bf16 products on operands already rounded to bf16
// (engine/kernels/bf16_gemm_fma.cpp): AVX-512's, and AVX2's in the tests of a CPU without
// bf16 units.
struct TiledProducts {
  bool (*product)(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                  int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
                  const float* start);
  bool (*product_tn_sums)(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c,
                          float* sums);
  void (*small_product)(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                        const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                        float* c, int64_t ldc, const float* start);
  bool (*makes_rows)(int64_t rows, int64_t cols, int64_t n);
  bool (*product_made_a)(const MadeRows& a, int64_t n, const float* b, const float* start,
                         float* c);
  bool (*product_tn_made)(int64_t m, const float* a, const MadeRows& b, float* c);
  bool (*product_then)(int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                       const RowsDone& done);
};
const TiledProducts& avx512_products();  // engine/kernels/gemm_avx512.cpp
const TiledProducts& avx2_products();    // engine/kernels/gemm_avx2.cpp

}  // namespace vg::detail
