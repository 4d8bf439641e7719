#include "engine/kernels/layer_norm_rows.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "engine/core/parallel.h"
#include "engine/kernels/layer_norm_rows_avx2.h"
#include "engine/kernels/layer_norm_rows_avx512.h"
#include "engine/kernels/row_sum.h"

namespace vg::kernels {
namespace {

// Calls body(weight) with weight(c) = w[c], or = 1.0 when there is no weight: the test is
// made once, not per element, and 1.0 folds away, so each loop is branch-free and vectorises.
template <class T, class Body>
void with_weight(const T* w, Body body) {
  if (w) {
    body([w](int64_t c) { return double(w[c]); });
  } else {
    body([](int64_t) { return 1.0; });
  }
}

// The weight and bias gradients are sums over all rows. The rows are cut into a fixed number
// of blocks (never depending on the thread count), each block sums its rows in order, and
// the block sums are added in block order: the same bits at any thread count.
constexpr int64_t kLayerNormBlocks = 32;

// One row's values from its mean and rstd.
template <class T>
void normalised_row(const T* x, const T* w, const T* b, double mean, double rstd, T* y, int64_t C) {
  with_weight(w, [&](auto weight) {
    if (b) {
      for (int64_t c = 0; c < C; ++c) y[c] = T((x[c] - mean) * rstd * weight(c) + double(b[c]));
    } else {
      for (int64_t c = 0; c < C; ++c) y[c] = T((x[c] - mean) * rstd * weight(c));
    }
  });
}

}  // namespace

template <class T>
void layer_norm_rows_generic(const T* x, const T* w, const T* b, double eps, T* y, double* stats,
                             int64_t rows, int64_t C) {
  for (int64_t i = 0; i < rows; ++i) {
    const T* xi = x + i * C;
    T* yi = y + i * C;
    const double mean = vec::row_sum(C, [&](int64_t c) { return xi[c]; }) / double(C);
    const double var = vec::row_sum(C, [&](int64_t c) {
      const double d = xi[c] - mean;
      return d * d;
    });
    const double rstd = 1.0 / std::sqrt(var / double(C) + eps);
    normalised_row(xi, w, b, mean, rstd, yi, C);
    stats[2 * i] = mean;
    stats[2 * i + 1] = rstd;
  }
}

template <class T>
void layer_norm_rows(const T* x, const T* w, const T* b, double eps, T* y, double* stats,
                     int64_t rows, int64_t C) {
  parallel_for(rows, vec::row_grain(C), [&](int64_t i0, int64_t i1) {
    if constexpr (std::is_same_v<T, float> && detail::kLayerNormRowsAvx512)
      detail::layer_norm_rows_avx512(x + i0 * C, w, b, eps, y + i0 * C, stats + 2 * i0, i1 - i0,
                                     C);
    else if constexpr (std::is_same_v<T, float> && detail::kLayerNormRowsAvx2)
      detail::layer_norm_rows_avx2(x + i0 * C, w, b, eps, y + i0 * C, stats + 2 * i0, i1 - i0, C);
    else
      layer_norm_rows_generic(x + i0 * C, w, b, eps, y + i0 * C, stats + 2 * i0, i1 - i0, C);
  });
}

template <class T>
void layer_norm_apply_rows_generic(const T* x, const T* w, const T* b, const double* stats, T* y,
                                   int64_t rows, int64_t C) {
  for (int64_t i = 0; i < rows; ++i)
    normalised_row(x + i * C, w, b, stats[2 * i], stats[2 * i + 1], y + i * C, C);
}

template <class T>
void layer_norm_apply_rows(const T* x, const T* w, const T* b, const double* stats, T* y,
                           int64_t rows, int64_t C) {
  parallel_for(rows, vec::row_grain(C), [&](int64_t i0, int64_t i1) {
    const int64_t at = i0 * C;
    if constexpr (std::is_same_v<T, float> && detail::kLayerNormRowsAvx512)
      detail::layer_norm_apply_rows_avx512(x + at, w, b, stats + 2 * i0, y + at, i1 - i0, C);
    else if constexpr (std::is_same_v<T, float> && detail::kLayerNormRowsAvx2)
      detail::layer_norm_apply_rows_avx2(x + at, w, b, stats + 2 * i0, y + at, i1 - i0, C);
    else
      layer_norm_apply_rows_generic(x + at, w, b, stats + 2 * i0, y + at, i1 - i0, C);
  });
}

template <class T>
void layer_norm_backward_rows(const T* x, const T* w, const double* stats, const T* dy, T* dx,
                              T* dw, T* db, int64_t rows, int64_t C, bool dx_adds) {
  if (rows == 0) {  // no rows: the parameters' gradients are empty sums
    if (dw) std::fill(dw, dw + C, T(0));
    if (db) std::fill(db, db + C, T(0));
    return;
  }
  const int64_t blocks = std::min(kLayerNormBlocks, rows);
  const bool params = dw || db;
  std::vector<double> partial(params ? blocks * 2 * C : 0, 0.0);  // per block: dw, db
  const int64_t rows_per_block = std::max<int64_t>(1, rows / std::max<int64_t>(blocks, 1));
  // xhat and g of the current row, in double, computed once: converting x and dy and
  // recomputing them in each of the three passes cost more than reading them back from L1.
  auto block_rows = [&](int64_t blk, auto weight, double* xhat, double* g, T* own) {
    double* pw = params ? partial.data() + blk * 2 * C : nullptr;
    double* pb = params ? pw + C : nullptr;
    for (int64_t i = rows * blk / blocks; i < rows * (blk + 1) / blocks; ++i) {
      const T *xi = x + i * C, *dyi = dy + i * C;
      const double mean = stats[2 * i], rstd = stats[2 * i + 1];
      for (int64_t c = 0; c < C; ++c) {
        xhat[c] = (xi[c] - mean) * rstd;
        g[c] = double(dyi[c]) * weight(c);
      }
      if (params) {
        for (int64_t c = 0; c < C; ++c) {
          pw[c] += dyi[c] * xhat[c];
          pb[c] += dyi[c];
        }
      }
      if (!dx) continue;
      const double mean_g = vec::row_sum(C, [&](int64_t c) { return g[c]; }) / double(C);
      const double mean_gx = vec::row_sum(C, [&](int64_t c) { return g[c] * xhat[c]; }) / double(C);
      T* dxi = dx + i * C;
      T* out = dx_adds ? own : dxi;
      for (int64_t c = 0; c < C; ++c) out[c] = T(rstd * (g[c] - mean_g - xhat[c] * mean_gx));
      // The row's own dx rounded to T first, then the add in a loop of its own: the engine's
      // accumulation's bits (an fma of the two, which GCC would make in double, would not).
      if (dx_adds)
        for (int64_t c = 0; c < C; ++c) dxi[c] += own[c];
    }
  };
  parallel_for(blocks, std::max<int64_t>(1, vec::row_grain(C) / rows_per_block),
               [&](int64_t b0, int64_t b1) {
                 std::vector<double> row(2 * C);
                 std::vector<T> own(dx_adds ? C : 0);
                 with_weight(w, [&](auto weight) {
                   for (int64_t blk = b0; blk < b1; ++blk)
                     block_rows(blk, weight, row.data(), row.data() + C, own.data());
                 });
               });
  if (!params) return;
  // Block sums added into block 0 in block order; c is the inner loop, so it vectorises.
  double* total = partial.data();
  for (int64_t blk = 1; blk < blocks; ++blk) {
    for (int64_t c = 0; c < 2 * C; ++c) total[c] += partial[blk * 2 * C + c];
  }
  for (int64_t c = 0; c < C; ++c) {
    if (dw) dw[c] = T(total[c]);
    if (db) db[c] = T(total[C + c]);
  }
}

template <class T>
void layer_norm_rows_reference(const T* x, const T* w, const T* b, double eps, T* y,
                               double* stats, int64_t rows, int64_t C) {
  for (int64_t i = 0; i < rows; ++i) {
    const T* xi = x + i * C;
    double mean = 0, var = 0;
    for (int64_t c = 0; c < C; ++c) mean += xi[c];
    mean /= double(C);
    for (int64_t c = 0; c < C; ++c) var += (xi[c] - mean) * (xi[c] - mean);
    const double rstd = 1.0 / std::sqrt(var / double(C) + eps);
    for (int64_t c = 0; c < C; ++c)
      y[i * C + c] = T((xi[c] - mean) * rstd * (w ? double(w[c]) : 1.0) + (b ? double(b[c]) : 0.0));
    stats[2 * i] = mean;
    stats[2 * i + 1] = rstd;
  }
}

template <class T>
void layer_norm_backward_rows_reference(const T* x, const T* w, const double* stats, const T* dy,
                                        T* dx, T* dw, T* db, int64_t rows, int64_t C) {
  std::vector<double> sum_w(C, 0.0), sum_b(C, 0.0), xhat(C), g(C);
  for (int64_t i = 0; i < rows; ++i) {
    const double mean = stats[2 * i], rstd = stats[2 * i + 1];
    double mean_g = 0, mean_gx = 0;
    for (int64_t c = 0; c < C; ++c) {
      xhat[c] = (x[i * C + c] - mean) * rstd;
      g[c] = double(dy[i * C + c]) * (w ? double(w[c]) : 1.0);
      sum_w[c] += dy[i * C + c] * xhat[c];
      sum_b[c] += dy[i * C + c];
      mean_g += g[c];
      mean_gx += g[c] * xhat[c];
    }
    mean_g /= double(C);
    mean_gx /= double(C);
    if (dx)
      for (int64_t c = 0; c < C; ++c)
        dx[i * C + c] = T(rstd * (g[c] - mean_g - xhat[c] * mean_gx));
  }
  for (int64_t c = 0; c < C; ++c) {
    if (dw) dw[c] = T(sum_w[c]);
    if (db) db[c] = T(sum_b[c]);
  }
}

#define VG_LAYER_NORM_ROWS(T)                                                                     \
  template void layer_norm_rows_generic(const T*, const T*, const T*, double, T*, double*,        \
                                        int64_t, int64_t);                                        \
  template void layer_norm_rows(const T*, const T*, const T*, double, T*, double*, int64_t,       \
                                int64_t);                                                         \
  template void layer_norm_apply_rows_generic(const T*, const T*, const T*, const double*, T*,    \
                                              int64_t, int64_t);                                  \
  template void layer_norm_apply_rows(const T*, const T*, const T*, const double*, T*, int64_t,   \
                                      int64_t);                                                   \
  template void layer_norm_backward_rows(const T*, const T*, const double*, const T*, T*, T*, T*, \
                                         int64_t, int64_t, bool);                                 \
  template void layer_norm_rows_reference(const T*, const T*, const T*, double, T*, double*,      \
                                          int64_t, int64_t);                                      \
  template void layer_norm_backward_rows_reference(const T*, const T*, const double*, const T*,   \
                                                   T*, T*, T*, int64_t, int64_t);
VG_LAYER_NORM_ROWS(float)
VG_LAYER_NORM_ROWS(double)
#undef VG_LAYER_NORM_ROWS

}  // namespace vg::kernels
