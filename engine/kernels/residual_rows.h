// A block's residual add after LayerScale, y = residual + x * scale, for a product that makes it
// as it stores each block of its rows (made_rows.h RowsDone): the bits of channel_affine then
// add, run one after the other. So x * scale is rounded to float before the sum: this file is
// built with -ffp-contract=off (CMakeLists.txt), where GCC would otherwise fuse the two into one
// fma, by default even across statements.
#pragma once

#include <cstdint>

namespace vg::kernels {

// y = residual + x * scale per element (residual + x with a null scale), rows of C values, on
// the calling thread.
void residual_scaled_block(const float* x, const float* scale, const float* residual, float* y,
                           int64_t rows, int64_t C);

}  // namespace vg::kernels
