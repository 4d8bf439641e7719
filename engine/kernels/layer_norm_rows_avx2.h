// LayerNorm's forward rows for float on AVX2 with fmas, for CPUs without AVX-512: what
// layer_norm_rows_avx512.h does there, row_sum's eight double lanes held in two registers of
// four. The generic loops' arithmetic in the same order, so the same bits, on four rows at once.
// Internal to kernels/layer_norm_rows.cpp (and its test).
#pragma once

#include <cstdint>

#include "engine/kernels/simd_build.h"

namespace vg::detail {

// Built where the build has AVX2 with fmas (kernels/simd_build.h), AVX-512 builds too, where
// the AVX-512 rows run instead and the test holds these to the generic loops as well.
inline constexpr bool kLayerNormRowsAvx2 = kBuildHasAvx2Fma;

// kernels::layer_norm_rows on the calling thread: rows of C floats, w and b may be null.
void layer_norm_rows_avx2(const float* x, const float* w, const float* b, double eps, float* y,
                          double* stats, int64_t rows, int64_t C);
// kernels::layer_norm_apply_rows on the calling thread.
void layer_norm_apply_rows_avx2(const float* x, const float* w, const float* b, const double* stats,
                                float* y, int64_t rows, int64_t C);

}  // namespace vg::detail
