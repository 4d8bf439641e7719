// The row-wise parts of attention for float on AVX-512: the softmax of rows of scores, and
// the softmax's backward on rows of dP. They do the generic loops' arithmetic in the same
// order (vec::exp's polynomial, row_sum's eight double lanes and their fixed tree), so they
// give the same bits; they work on several rows at once, with no scalar tail after a row's
// last full vector. Internal to kernels/attention_head.cpp.
#pragma once

#include <cstdint>

#include "engine/kernels/simd_build.h"

namespace vg::detail {

// Built where the build has AVX-512 with fmas (kernels/simd_build.h).
inline constexpr bool kAttentionRowsAvx512 = kBuildHasAvx512Fma;

// Each of `rows` rows of n >= 1 entries (stored n apart) = its softmax, in place:
// m = max, e = exp(row - m), row = e * float(1 / sum e).
void softmax_rows_avx512(float* p, int64_t rows, int64_t n);

// Each row of ds = p * (ds - sum_j ds_j p_j) in place, the sum in double: dS from dP and P.
void softmax_grad_rows_avx512(const float* p, float* ds, int64_t rows, int64_t n);

}  // namespace vg::detail
