#include "engine/kernels/im2col.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/core/parallel.h"
#include "engine/kernels/blas.h"

namespace vg::kernels {
namespace {

// Output position (n, oy, ox) of column row r, stepped row by row without a division.
struct Position {
  int64_t n, oy, ox;
  Position(const ConvGeometry& g, int64_t r)
      : n(r / (g.out_height() * g.out_width())),
        oy(r / g.out_width() % g.out_height()),
        ox(r % g.out_width()) {}
  void next(const ConvGeometry& g) {
    if (++ox < g.out_width()) return;
    ox = 0;
    if (++oy == g.out_height()) oy = 0, ++n;
  }
};

// Calls f(offset, pixel, count) for the k kernel rows of the patch at `at`, in order, in runs
// of taps: `count` values at row[offset] belong with the image's values at `pixel` (side by
// side in a channels-last image), or with the zero padding where pixel = -1. A kernel row
// inside the image is one run of k * C values; one that crosses an edge is a run per tap.
template <class F>
inline void for_each_run(const ConvGeometry& g, const Position& at, F&& f) {
  const int64_t C = g.channels, k = g.kernel, x0 = at.ox * g.stride - g.padding;
  for (int64_t i = 0; i < k; ++i) {
    const int64_t y = at.oy * g.stride - g.padding + i, offset = i * k * C;
    if (y < 0 || y >= g.height) {
      f(offset, int64_t{-1}, k * C);
      continue;
    }
    const int64_t line = (at.n * g.height + y) * g.width;
    if (x0 >= 0 && x0 + k <= g.width) {
      f(offset, (line + x0) * C, k * C);
      continue;
    }
    for (int64_t j = 0; j < k; ++j) {
      const int64_t x = x0 + j;
      f(offset + j * C, x >= 0 && x < g.width ? (line + x) * C : -1, C);
    }
  }
}

}  // namespace

template <class T>
void im2col_rows(const ConvGeometry& g, const T* image, int64_t r0, int64_t r1, int64_t c0,
                 int64_t c1, T* out) {
  const int64_t width = c1 - c0;
  Position at(g, r0);
  for (int64_t r = r0; r < r1; ++r, at.next(g)) {
    T* row = out + (r - r0) * width - c0;  // row[c] is column c
    for_each_run(g, at, [&](int64_t offset, int64_t pixel, int64_t count) {
      const int64_t from = std::max(offset, c0), to = std::min(offset + count, c1);
      if (from >= to) return;
      if (pixel < 0)
        std::fill(row + from, row + to, T(0));
      else if (to - from < 8)  // a grey or colour pixel: a call would cost more than the copy
        for (int64_t c = from; c < to; ++c) row[c] = image[pixel + c - offset];
      else
        std::memcpy(row + from, image + pixel + (from - offset), (to - from) * sizeof(T));
    });
  }
}

template <class T>
void im2col(const ConvGeometry& g, const T* image, T* columns) {
  parallel_for(g.rows(), 64, [&](int64_t r0, int64_t r1) {
    im2col_rows(g, image, r0, r1, 0, g.row_len(), columns + r0 * g.row_len());
  });
}

// Adds n values of src to dst; the two never overlap (a column row and an image).
template <class T>
inline void add_into(T* __restrict dst, const T* __restrict src, int64_t n) {
  for (int64_t c = 0; c < n; ++c) dst[c] += src[c];
}

template <class T>
void col2im(const ConvGeometry& g, const T* columns, T* image) {
  const int64_t len = g.row_len(), image_len = g.height * g.width * g.channels;
  const int64_t rows_per_image = g.out_height() * g.out_width();
  // One image per task: two output positions of an image may cover the same pixel, two
  // images never do. A run's taps cover different pixels, so each pixel still receives its
  // terms in (row, tap) order.
  parallel_for(g.batch, 1, [&](int64_t n0, int64_t n1) {
    std::fill(image + n0 * image_len, image + n1 * image_len, T(0));
    Position at(g, n0 * rows_per_image);
    for (int64_t r = n0 * rows_per_image; r < n1 * rows_per_image; ++r, at.next(g)) {
      const T* row = columns + r * len;
      for_each_run(g, at, [&](int64_t offset, int64_t pixel, int64_t count) {
        if (pixel >= 0) add_into(image + pixel, row + offset, count);
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

#define VG_IM2COL(T)                                                                           \
  template void im2col(const ConvGeometry&, const T*, T*);                                     \
  template void im2col_rows(const ConvGeometry&, const T*, int64_t, int64_t, int64_t, int64_t, \
                            T*);                                                               \
  template void col2im(const ConvGeometry&, const T*, T*);                                     \
  template void conv_input_gradient(const ConvGeometry&, int64_t, const T*, const T*, T*);     \
  template void im2col_reference(const ConvGeometry&, const T*, T*);                           \
  template void col2im_reference(const ConvGeometry&, const T*, T*);
VG_IM2COL(float)
VG_IM2COL(double)
#undef VG_IM2COL

}  // namespace vg::kernels
