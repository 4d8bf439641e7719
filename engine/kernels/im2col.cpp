#include "engine/kernels/im2col.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/core/parallel.h"
#include "engine/kernels/blas.h"

namespace vg::kernels {
namespace {

// Calls f(tap, pixel) for the k * k taps of column row r in order (tap = i * k + j): pixel =
// the offset of the covered input pixel's first channel, or -1 where the tap lies in the
// padding.
template <class F>
inline void for_each_tap(const ConvGeometry& g, int64_t r, F&& f) {
  const int64_t Ho = g.out_height(), Wo = g.out_width();
  const int64_t n = r / (Ho * Wo), oy = r / Wo % Ho, ox = r % Wo;
  for (int64_t i = 0; i < g.kernel; ++i) {
    const int64_t y = oy * g.stride - g.padding + i;
    for (int64_t j = 0; j < g.kernel; ++j) {
      const int64_t x = ox * g.stride - g.padding + j;
      const bool inside = y >= 0 && y < g.height && x >= 0 && x < g.width;
      f(i * g.kernel + j, inside ? ((n * g.height + y) * g.width + x) * g.channels : -1);
    }
  }
}

}  // namespace

template <class T>
void im2col(const ConvGeometry& g, const T* image, T* columns) {
  const int64_t C = g.channels, len = g.row_len();
  parallel_for(g.rows(), 64, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      T* row = columns + r * len;
      for_each_tap(g, r, [&](int64_t tap, int64_t pixel) {
        if (pixel < 0)
          std::fill(row + tap * C, row + (tap + 1) * C, T(0));
        else if (C < 8)  // a grey or colour image: a call per pixel would cost more
          for (int64_t c = 0; c < C; ++c) row[tap * C + c] = image[pixel + c];
        else
          std::memcpy(row + tap * C, image + pixel, C * sizeof(T));
      });
    }
  });
}

// Adds n values of src to dst; the two never overlap (a column row and an image).
template <class T>
inline void add_into(T* __restrict dst, const T* __restrict src, int64_t n) {
  for (int64_t c = 0; c < n; ++c) dst[c] += src[c];
}

template <class T>
void col2im(const ConvGeometry& g, const T* columns, T* image) {
  const int64_t C = g.channels, len = g.row_len();
  const int64_t image_len = g.height * g.width * g.channels;
  const int64_t rows_per_image = g.out_height() * g.out_width();
  // One image per task: two output positions of an image may cover the same pixel, two
  // images never do.
  parallel_for(g.batch, 1, [&](int64_t n0, int64_t n1) {
    std::fill(image + n0 * image_len, image + n1 * image_len, T(0));
    for (int64_t r = n0 * rows_per_image; r < n1 * rows_per_image; ++r) {
      const T* row = columns + r * len;
      for_each_tap(g, r, [&](int64_t tap, int64_t pixel) {
        if (pixel >= 0) add_into(image + pixel, row + tap * C, C);
      });
    }
  });
}

template <class T>
void conv_input_gradient(const ConvGeometry& g, int64_t c_out, const T* grad, const T* weight,
                         T* image) {
  const int64_t len = g.row_len(), rows_per_image = g.out_height() * g.out_width();
  const int64_t image_len = g.height * g.width * g.channels;
  ConvGeometry one = g;
  one.batch = 1;
  parallel_for(g.batch, 1, [&](int64_t n0, int64_t n1) {
    thread_local std::vector<T> columns;  // one image's, grown once per shape
    columns.resize(rows_per_image * len);
    for (int64_t n = n0; n < n1; ++n) {
      gemm(false, false, rows_per_image, len, c_out, T(1), grad + n * rows_per_image * c_out, c_out,
           weight, len, T(0), columns.data(), len);
      col2im(one, columns.data(), image + n * image_len);
    }
  });
}

template <class T>
void im2col_reference(const ConvGeometry& g, const T* image, T* columns) {
  const int64_t Ho = g.out_height(), Wo = g.out_width(), k = g.kernel;
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t oy = 0; oy < Ho; ++oy)
      for (int64_t ox = 0; ox < Wo; ++ox)
        for (int64_t i = 0; i < k; ++i)
          for (int64_t j = 0; j < k; ++j)
            for (int64_t c = 0; c < g.channels; ++c) {
              const int64_t y = oy * g.stride - g.padding + i, x = ox * g.stride - g.padding + j;
              const bool inside = y >= 0 && y < g.height && x >= 0 && x < g.width;
              columns[((n * Ho + oy) * Wo + ox) * g.row_len() + (i * k + j) * g.channels + c] =
                  inside ? image[((n * g.height + y) * g.width + x) * g.channels + c] : T(0);
            }
}

template <class T>
void col2im_reference(const ConvGeometry& g, const T* columns, T* image) {
  const int64_t Ho = g.out_height(), Wo = g.out_width(), k = g.kernel;
  std::fill(image, image + g.batch * g.height * g.width * g.channels, T(0));
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t oy = 0; oy < Ho; ++oy)
      for (int64_t ox = 0; ox < Wo; ++ox)
        for (int64_t i = 0; i < k; ++i)
          for (int64_t j = 0; j < k; ++j)
            for (int64_t c = 0; c < g.channels; ++c) {
              const int64_t y = oy * g.stride - g.padding + i, x = ox * g.stride - g.padding + j;
              if (y < 0 || y >= g.height || x < 0 || x >= g.width) continue;
              image[((n * g.height + y) * g.width + x) * g.channels + c] +=
                  columns[((n * Ho + oy) * Wo + ox) * g.row_len() + (i * k + j) * g.channels + c];
            }
}

#define VG_IM2COL(T)                                                                       \
  template void im2col(const ConvGeometry&, const T*, T*);                                 \
  template void col2im(const ConvGeometry&, const T*, T*);                                 \
  template void conv_input_gradient(const ConvGeometry&, int64_t, const T*, const T*, T*); \
  template void im2col_reference(const ConvGeometry&, const T*, T*);                       \
  template void col2im_reference(const ConvGeometry&, const T*, T*);
VG_IM2COL(float)
VG_IM2COL(double)
#undef VG_IM2COL

}  // namespace vg::kernels
