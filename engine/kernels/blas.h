// Matrix products for every op, under the engine's one thread pool.
//
// Float products go to the engine's own tiles (engine/kernels/gemm_simd.h), AVX-512 or AVX2
// ones as the CPU has them: those with many rows (a linear layer over every token of a
// batch, or any large product) or a long k with A transposed (a weight gradient) on their
// own layouts, every other one cut into blocks as below, each block on the tiles' small-product
// loops. So no float product depends on the kernels OpenBLAS picks for the CPU. OpenBLAS computes
// the double products (gradient checks), and the float ones on a CPU without AVX2 and FMA or with
// VITGRAD_GEMM=blas. In bf16 mode (engine/kernels/matmul_precision.h) every float product
// goes to engine/kernels/bf16_gemm.h instead.
//
// OpenBLAS keeps its own threads, and two pools on two cores spin against each other (most
// of a step went to sched_yield and OpenMP spin-waits when both were active). So OpenBLAS
// always runs single-threaded here, and gemm() splits a large product itself into blocks
// of rows (or columns, or of k), one per engine thread; called inside a parallel region
// (e.g. one attention head per task) it runs the product on the calling thread.
#pragma once

#include <cstdint>
#include <string>

#include "engine/kernels/bf16_gemm.h"
#include "engine/kernels/made_rows.h"

namespace vg {

// Row-major C (m x n) = alpha * op(A) op(B) + beta * C, op = transpose where ta / tb.
// Empty products are handled (k = 0 scales C by beta).
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
          int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc);

// The same product for a matrix small enough that one thread computes it whole, such as
// one attention head's: float products go to the engine's tiles (engine/kernels/gemm_simd.h)
// at any size, without the call overhead and packing of A that OpenBLAS spends on every
// call; double, and float without the tiles, as gemm().
void gemm_small(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
void gemm_small(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
                int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc);

// Row-major C (m x n) = A (m x k) B^T + bias in every row, with B (n x k) and bias (n) or
// null: a linear layer's forward. Where the engine's tiles take the product, the bias is
// where each sum starts; otherwise C is filled with the bias first and the product added
// to it (beta = 1), one pass fewer than zeroing C and adding the bias afterwards.
void gemm_bias(int64_t m, int64_t n, int64_t k, const float* a, const float* b, const float* bias,
               float* c);
void gemm_bias(int64_t m, int64_t n, int64_t k, const double* a, const double* b,
               const double* bias, double* c);

// C (m x n) = A^T B for A (k x m) and B (k x n), all contiguous, and into sums (m) the sums of
// A's columns with the bits of the `sum` op: a weight gradient dY^T X and its bias gradient,
// taken while the product has dY in cache (in bf16 mode as it packs dY; in fp32 right after
// each block's tiles), so dY is read from memory once instead of twice.
void gemm_tn_sums(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c,
                  float* sums);
void gemm_tn_sums(int64_t m, int64_t n, int64_t k, const double* a, const double* b, double* c,
                  double* sums);

// Products with one operand made on demand (engine/kernels/made_rows.h). True where they
// make it a block of rows at a time, as it is packed, whatever the shape, and the forward can
// hand each block of C on (`done` below): bf16 mode, either kind of bf16 unit.
bool products_make_rows();
// True where both products below make a matrix of rows x cols a block of rows at a time (the
// forward's A, with C n wide, and the weight gradient's B, with C n x cols): always in bf16
// mode, and in fp32 for the shapes the engine's float tiles take. Otherwise they make it whole
// first and run the stored product, so a caller that would keep the matrix anyway had better
// pass it stored.
bool products_make_rows_for(int64_t rows, int64_t cols, int64_t n);
// True where a product C (m x n), k deep, runs a block of C's rows at a time, so that
// gemm_bias_made makes its A (m x k) and gemm_then hands its C on one block at a time, never
// whole: always in bf16 mode, and in fp32 where the engine's float tiles take the shape with B
// packed whole (GELU's values on their way into fc2, and fc2's input gradient on its way back).
bool products_by_row_blocks(int64_t m, int64_t n, int64_t k);
// C (a.rows x n) = A B^T + bias in every row, B (n x a.cols), bias (n) or null: gemm_bias.
// With `done` (made_rows.h RowsDone; products_make_rows() only), each finished block of C's
// rows goes to done instead of c: so with the two forwards below.
void gemm_bias_made(const MadeRows& a, int64_t n, const float* b, const float* bias, float* c,
                    const RowsDone* done = nullptr);
// C (m x b.cols) = A^T B, A (b.rows x m): a weight gradient, gemm(true, false, ...).
void gemm_tn_made(int64_t m, const float* a, const MadeRows& b, float* c);

// A linear's input kept in bf16 for its weight gradient (engine/kernels/bf16_gemm.h Bf16Rows).
// True where the products can (bf16 mode): they round that input to bf16 anyway, so keeping
// the words costs half the input's bytes and spares making it again.
bool products_keep_bf16();
// gemm_bias, with A rounded to bf16 into `kept` as the product packs it. Needs
// products_keep_bf16().
void gemm_bias_keeping_a(int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                         const float* bias, float* c, Bf16Rows& kept,
                         const RowsDone* done = nullptr);
// gemm_bias with A (a.rows x a.cols) already rounded to bf16 by rows, as the product would pack
// it: the bits of the product on the floats it rounds. Needs products_keep_bf16().
void gemm_bias_rounded(const Bf16Rows& a, int64_t n, const float* b, const float* bias, float* c,
                       const RowsDone* done = nullptr);
// C (m x n) = A B for row-major A (m x k) and B (k x n), with the bits of gemm(), each block of
// C's rows handed to done (made_rows.h RowsDone) as the product finishes it, in cache, instead
// of being stored. Needs products_by_row_blocks(m, n, k); elsewhere a caller runs the product,
// then its pass.
void gemm_then(int64_t m, int64_t n, int64_t k, const float* a, const float* b,
               const RowsDone& done);
// gemm_tn_sums with B kept (b.rows = k, b.cols = n): the bits of the product on the floats.
void gemm_tn_sums(int64_t m, const float* a, const Bf16Rows& b, float* c, float* sums);

// C (m x n) = op(A) op(B) on OpenBLAS's sgemm whatever the precision and the CPU, cut into
// blocks on the engine's threads (OpenBLAS single-threaded, as everywhere here) as gemm() cuts
// the products it gives OpenBLAS: a library's rate, the reference `vitgrad bench` measures the
// model's products against (its 1024^3 sgemm, and each product with --products), whatever
// gemm() runs on.
void gemm_on_openblas(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a,
                      int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc);

// The OpenBLAS kernel family in use, e.g. "Haswell" or "Cooperlake".
const char* blas_core_name();
// Whose float products the linear layers and attention heads run on: "AVX-512" or "AVX2"
// (vitgrad's own tiles, engine/kernels/gemm_simd.h) or "OpenBLAS" (VITGRAD_GEMM=blas, or a
// CPU with neither).
const char* float_tiles_name();
// True when `core` (an OPENBLAS_CORETYPE value) names kernels narrower than the CPU runs:
// a family without AVX-512 on a CPU with AVX-512.
bool blas_core_narrower_than_cpu(const char* core);
// The family to name in OPENBLAS_CORETYPE where it is unset and OpenBLAS, not recognising the
// CPU, chose kernels narrower than the CPU runs (a new Xeon gets its oldest, Prescott, and a
// fifth of the sgemm rate); null otherwise.
const char* blas_core_for_cpu();
// "warning: ..." when OPENBLAS_CORETYPE holds OpenBLAS to narrower kernels than the CPU
// supports, "note: ..." when it was dropped for that reason or set for an unrecognised CPU
// (tools/main.cpp); else empty.
std::string blas_core_note();

}  // namespace vg
