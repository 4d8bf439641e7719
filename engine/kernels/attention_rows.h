// The row-wise parts of attention for float on AVX-512: the softmax of rows of scores, and
// the softmax's backward on rows of dP. They do the generic loops' arithmetic in the same
// order (vec::exp's polynomial, row_sum's eight double lanes and their fixed tree), so they
// give the same bits; they work on several rows at once, with no scalar tail after a row's
// last full vector. Internal to kernels/attention_head.cpp.
#pragma once

#include <cstdint>

namespace vg::detail {

// True where the build targets AVX-512 with fmas (-march=native on such a CPU): only there
// do the generic loops contract to the same fmas, so only there are the two functions below
// built. A portable build runs the generic loops, whatever the CPU, so that its bits do not
// depend on where it runs.
#if defined(__AVX512F__) && defined(__FMA__)
inline constexpr bool kAttentionRowsAvx512 = true;
#else
inline constexpr bool kAttentionRowsAvx512 = false;
#endif

// Each of `rows` rows of n >= 1 entries (stored n apart) = its softmax, in place:
// m = max, e = exp(row - m), row = e * float(1 / sum e).
void softmax_rows_avx512(float* p, int64_t rows, int64_t n);

// Each row of ds = p * (ds - sum_j ds_j p_j) in place, the sum in double: dS from dP and P.
void softmax_grad_rows_avx512(const float* p, float* ds, int64_t rows, int64_t n);

}  // namespace vg::detail
