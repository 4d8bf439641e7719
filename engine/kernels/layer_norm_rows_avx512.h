// LayerNorm's forward rows for float on AVX-512: the generic loops' arithmetic in the same order
// (row_sum's eight double lanes and their fixed tree for the mean and the variance, the fmas
// GCC contracts in the values), so the same bits, on four rows at once. One row's two sums are
// chains of dependent additions (24 each at C = 192) that the CPU could not overlap within the
// row; four rows' chains run side by side. Internal to kernels/layer_norm_rows.cpp.
#pragma once

#include <cstdint>

#include "engine/kernels/simd_build.h"

namespace vg::detail {

// Built where the build has AVX-512 with fmas (kernels/simd_build.h): only there do the
// generic loops contract to the fmas these rows use.
inline constexpr bool kLayerNormRowsAvx512 = kBuildHasAvx512Fma;

// kernels::layer_norm_rows on the calling thread: rows of C floats, w and b may be null.
void layer_norm_rows_avx512(const float* x, const float* w, const float* b, double eps, float* y,
                            double* stats, int64_t rows, int64_t C);
// kernels::layer_norm_apply_rows on the calling thread.
void layer_norm_apply_rows_avx512(const float* x, const float* w, const float* b,
                                  const double* stats, float* y, int64_t rows, int64_t C);

}  // namespace vg::detail
