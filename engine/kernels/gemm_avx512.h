// An AVX-512 float product for the shapes a small ViT is made of: many rows (tokens times
// images), a short inner dimension (the embedding width, 64 to a few hundred) and a few
// hundred columns. OpenBLAS packs both operands for every call; at k = 64 that packing, and
// the memset or copy of C around it, cost about as much as the multiply-adds. Here only
// op(B), the small operand, is packed (into 64-column panels that stay in cache), rows of A
// are broadcast straight from memory, and C is read or written once per chunk of k.
// Internal to engine/kernels/blas.cpp.
#pragma once

#include <cstdint>

namespace vg::detail {

// Row-major C (m x n) = alpha * op(A) op(B) + beta * C, computed here when the CPU has
// AVX-512 and the shape is one this kernel is faster for; returns false (and touches
// nothing) otherwise. Two cases: A not transposed with k up to about a thousand (a linear
// layer's forward and input gradient), and A transposed, B not, with a long k (its weight
// gradient; with beta = 0 it computes C^T = B^T A instead when B is the wider operand, so
// that the narrower one is packed). Each element of C is a fused multiply-add chain over
// each chunk of 256 terms of k, the chunks added to C in order, so the bits depend on the
// shape alone, not on how rows are shared among threads or which operand is packed. With `start` (n values, e.g. a bias; first case only) each chain
// starts from start[j] instead of zero, and alpha then scales the whole chain.
bool gemm_avx512(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                 int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
                 const float* start = nullptr);

// gemm_avx512(true, false, m, n, k, 1, a, m, b, n, 0, c, n) for contiguous operands, and into
// sums (m) the sums of A's columns with the bits of kernels::sum_middle_axis(a, sums, 1, k, m),
// each chunk of A summed right after its products have read it, from cache: a weight gradient
// dY^T X and its bias gradient. False (touching nothing) where gemm_avx512 would be.
bool gemm_avx512_tn_sums(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* c,
                         float* sums);

// The same product for a small matrix that one thread computes whole (one attention head):
// no size bounds, the products on the calling thread; op(B) is read in place when it is not
// transposed, and packed with 16 x 16 transposes in registers when it is. Each element is an fma
// chain over each chunk of 256 terms of k, as above. False (touching nothing) without AVX-512, with
// VITGRAD_GEMM=blas, with both operands transposed, or for an empty product.
bool gemm_avx512_small(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                       const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                       float* c, int64_t ldc);

// What gemm_avx512_small runs, without its checks, and with `start` as gemm_avx512 takes it:
// the float products of small bf16 products on operands already rounded to bf16
// (engine/kernels/bf16_gemm_fma.cpp). The caller makes sure the CPU has AVX-512, that m, n and
// k are positive and that not both operands are transposed.
void small_product_avx512(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                          const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                          float* c, int64_t ldc, const float* start);

}  // namespace vg::detail
