#include "engine/kernels/softmax_rows.h"

#include <algorithm>
#include <cmath>

#include "engine/core/parallel.h"
#include "engine/kernels/row_sum.h"
#include "engine/kernels/vec_math.h"

namespace vg::kernels {

// The exps go to y first, in a loop of their own, so that both it and the sum vectorise.
template <class T>
void softmax_rows(const T* x, T* y, int64_t rows, int64_t C, bool log) {
  parallel_for(rows, vec::row_grain(C), [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const T* xi = x + i * C;
      T* yi = y + i * C;
      const T m = vec::row_max(xi, C);
      for (int64_t c = 0; c < C; ++c) yi[c] = vec::exp_of(T(xi[c] - m));
      const double s = vec::row_sum(C, [&](int64_t c) { return yi[c]; });
      if (log) {
        const double lse = m + std::log(s);
        for (int64_t c = 0; c < C; ++c) yi[c] = T(xi[c] - lse);
      } else {
        const T inv = T(1.0 / s);
        for (int64_t c = 0; c < C; ++c) yi[c] *= inv;
      }
    }
  });
}

template <class T>
void softmax_backward_rows(const T* y, const T* dy, T* dx, int64_t rows, int64_t C, bool log) {
  parallel_for(rows, vec::row_grain(C), [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const T *yi = y + i * C, *dyi = dy + i * C;
      T* dxi = dx + i * C;
      if (log) {
        const T s = T(vec::row_sum(C, [&](int64_t c) { return dyi[c]; }));
        for (int64_t c = 0; c < C; ++c) dxi[c] = dyi[c] - vec::exp_of(yi[c]) * s;
      } else {
        const T s = T(vec::row_sum(C, [&](int64_t c) { return double(dyi[c]) * yi[c]; }));
        for (int64_t c = 0; c < C; ++c) dxi[c] = yi[c] * (dyi[c] - s);
      }
    }
  });
}

template <class T>
void softmax_rows_reference(const T* x, T* y, int64_t rows, int64_t C, bool log) {
  for (int64_t i = 0; i < rows; ++i) {
    const T* xi = x + i * C;
    const T m = *std::max_element(xi, xi + C);
    double s = 0;
    for (int64_t c = 0; c < C; ++c) s += std::exp(double(xi[c] - m));
    for (int64_t c = 0; c < C; ++c)
      y[i * C + c] = log ? T(xi[c] - (m + std::log(s))) : T(std::exp(double(xi[c] - m)) / s);
  }
}

template <class T>
void softmax_backward_rows_reference(const T* y, const T* dy, T* dx, int64_t rows, int64_t C,
                                     bool log) {
  for (int64_t i = 0; i < rows; ++i) {
    double s = 0;
    for (int64_t c = 0; c < C; ++c) s += log ? double(dy[i * C + c]) : double(dy[i * C + c]) * y[i * C + c];
    for (int64_t c = 0; c < C; ++c) {
      const double yc = y[i * C + c], dyc = dy[i * C + c];
      dx[i * C + c] = T(log ? dyc - std::exp(yc) * s : yc * (dyc - s));
    }
  }
}

#define VG_SOFTMAX_ROWS(T)                                                                   \
  template void softmax_rows(const T*, T*, int64_t, int64_t, bool);                          \
  template void softmax_backward_rows(const T*, const T*, T*, int64_t, int64_t, bool);       \
  template void softmax_rows_reference(const T*, T*, int64_t, int64_t, bool);                \
  template void softmax_backward_rows_reference(const T*, const T*, T*, int64_t, int64_t, bool);
VG_SOFTMAX_ROWS(float)
VG_SOFTMAX_ROWS(double)
#undef VG_SOFTMAX_ROWS

}  // namespace vg::kernels
