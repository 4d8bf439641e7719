#include "engine/kernels/channel_affine_rows.h"

#include <algorithm>
#include <vector>

#include "engine/core/parallel.h"

namespace vg::kernels {
namespace {

// Rows per block of the backward's partial sums: a function of the row count only (never of
// the thread count), at least 64, and at most about 256 blocks.
int64_t row_block(int64_t rows) {
  return std::max<int64_t>(64, (rows + 255) / 256);
}

// Work items per thread so that each thread gets about 32k elements: small tensors stay on
// the calling thread.
int64_t grain_for(int64_t elements_per_item) {
  return std::max<int64_t>(1, 32768 / std::max<int64_t>(1, elements_per_item));
}

}  // namespace

template <class T>
void channel_affine_block(const T* x, const T* scale, const T* shift, T* y, int64_t rows,
                          int64_t C) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * C;
    T* yr = y + r * C;
    if (shift)
      for (int64_t c = 0; c < C; ++c) yr[c] = xr[c] * scale[c] + shift[c];
    else
      for (int64_t c = 0; c < C; ++c) yr[c] = xr[c] * scale[c];
  }
}

template <class T>
void channel_affine_rows(const T* x, const T* scale, const T* shift, T* y, int64_t rows,
                         int64_t C) {
  parallel_for(rows, grain_for(C), [&](int64_t r0, int64_t r1) {
    channel_affine_block(x + r0 * C, scale, shift, y + r0 * C, r1 - r0, C);
  });
}

template <class T>
void channel_affine_backward_rows(const T* dy, const T* x, const T* scale, T* dx, T* dscale,
                                  T* dshift, int64_t rows, int64_t C, bool dx_adds) {
  const int64_t block = row_block(rows), blocks = (rows + block - 1) / block;
  // Per row block, double partial sums of dy * x and dy for every channel.
  std::vector<double> part_scale(dscale ? blocks * C : 0);
  std::vector<double> part_shift(dshift ? blocks * C : 0);
  parallel_for(blocks, grain_for(block * C), [&](int64_t b0, int64_t b1) {
    std::vector<T> own(dx_adds ? C : 0);
    for (int64_t b = b0; b < b1; ++b) {
      double* acc_s = dscale ? part_scale.data() + b * C : nullptr;
      double* acc_b = dshift ? part_shift.data() + b * C : nullptr;
      for (int64_t r = b * block, r1 = std::min(rows, (b + 1) * block); r < r1; ++r) {
        const T* gr = dy + r * C;
        if (dx && !dx_adds)
          for (int64_t c = 0; c < C; ++c) dx[r * C + c] = gr[c] * scale[c];
        // Rounded to T first, then added in a loop of its own: the engine's add's bits, where
        // GCC would fuse a product and a sum in one statement into an fma.
        if (dx && dx_adds) {
          for (int64_t c = 0; c < C; ++c) own[c] = gr[c] * scale[c];
          for (int64_t c = 0; c < C; ++c) dx[r * C + c] += own[c];
        }
        if (acc_s) {
          const T* xr = x + r * C;
          for (int64_t c = 0; c < C; ++c) acc_s[c] += double(gr[c]) * double(xr[c]);
        }
        if (acc_b)
          for (int64_t c = 0; c < C; ++c) acc_b[c] += double(gr[c]);
      }
    }
  });
  // Combine the blocks in order, one channel per task.
  auto combine = [&](const std::vector<double>& part, T* dst) {
    parallel_for(C, grain_for(blocks), [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        double s = 0;
        for (int64_t b = 0; b < blocks; ++b) s += part[b * C + c];
        dst[c] = static_cast<T>(s);
      }
    });
  };
  if (dscale) combine(part_scale, dscale);
  if (dshift) combine(part_shift, dshift);
}

template <class T>
void channel_affine_rows_reference(const T* x, const T* scale, const T* shift, T* y,
                                   int64_t rows, int64_t C) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < C; ++c)
      y[r * C + c] = shift ? x[r * C + c] * scale[c] + shift[c] : x[r * C + c] * scale[c];
}

template <class T>
void channel_affine_backward_rows_reference(const T* dy, const T* x, const T* scale, T* dx,
                                            T* dscale, T* dshift, int64_t rows, int64_t C) {
  for (int64_t c = 0; c < C; ++c) {
    double s = 0, b = 0;
    for (int64_t r = 0; r < rows; ++r) {
      if (dx) dx[r * C + c] = dy[r * C + c] * scale[c];
      if (dscale) s += double(dy[r * C + c]) * double(x[r * C + c]);
      b += double(dy[r * C + c]);
    }
    if (dscale) dscale[c] = static_cast<T>(s);
    if (dshift) dshift[c] = static_cast<T>(b);
  }
}

#define VG_CHANNEL_AFFINE_ROWS(T)                                                            \
  template void channel_affine_rows(const T*, const T*, const T*, T*, int64_t, int64_t);     \
  template void channel_affine_block(const T*, const T*, const T*, T*, int64_t, int64_t);    \
  template void channel_affine_rows_reference(const T*, const T*, const T*, T*, int64_t,      \
                                              int64_t);                                       \
  template void channel_affine_backward_rows(const T*, const T*, const T*, T*, T*, T*,       \
                                             int64_t, int64_t, bool);                        \
  template void channel_affine_backward_rows_reference(const T*, const T*, const T*, T*, T*, \
                                                       T*, int64_t, int64_t);
VG_CHANNEL_AFFINE_ROWS(float)
VG_CHANNEL_AFFINE_ROWS(double)
#undef VG_CHANNEL_AFFINE_ROWS

}  // namespace vg::kernels
