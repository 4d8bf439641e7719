#include "engine/kernels/residual_rows.h"

namespace vg::kernels {

void residual_scaled_block(const float* x, const float* scale, const float* residual, float* y,
                           int64_t rows, int64_t C) {
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * C, *rr = residual + r * C;
    float* yr = y + r * C;
    if (scale)
      for (int64_t c = 0; c < C; ++c) yr[c] = rr[c] + xr[c] * scale[c];
    else
      for (int64_t c = 0; c < C; ++c) yr[c] = rr[c] + xr[c];
  }
}

}  // namespace vg::kernels
