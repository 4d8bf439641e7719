// LayerNorm over rows of C values (the last axis), forward and backward. Every sum is in
// double, in an order fixed by the shape alone: the same bits at any thread count.
#pragma once

#include <cstdint>

namespace vg::kernels {

// y = (x - mean) * rstd * w + b per row; stats receives (mean, rstd) per row. w and b may be
// null (no weight, no bias). Row sums in row_sum's eight lanes.
template <class T>
void layer_norm_rows(const T* x, const T* w, const T* b, double eps, T* y, double* stats,
                     int64_t rows, int64_t C);

// layer_norm_rows' values again from the stats it left: its last pass alone, with its bits,
// for a backward that needs the values once more but not the sums that made the stats.
template <class T>
void layer_norm_apply_rows(const T* x, const T* w, const T* b, const double* stats, T* y,
                           int64_t rows, int64_t C);

// layer_norm_rows' and layer_norm_apply_rows' generic loops on the calling thread, one row at
// a time: where the build has AVX-512 or AVX2 with fmas, float rows take
// kernels/layer_norm_rows_avx512.h or kernels/layer_norm_rows_avx2.h instead, which must give
// these bits (the tests compare them).
template <class T>
void layer_norm_rows_generic(const T* x, const T* w, const T* b, double eps, T* y, double* stats,
                             int64_t rows, int64_t C);
template <class T>
void layer_norm_apply_rows_generic(const T* x, const T* w, const T* b, const double* stats, T* y,
                                   int64_t rows, int64_t C);

// g = dy * w; dx = rstd * (g - mean(g) - xhat * mean(g * xhat)); dw = sum_rows dy * xhat;
// db = sum_rows dy. dx, dw and db may each be null (not needed). The rows are cut into 32
// blocks whose parameter sums are added in block order. With dx_adds, dx holds a gradient x
// has already received, and each element becomes that + its own dx (rounded to T first): the
// bits of storing dx and adding the two arrays after.
template <class T>
void layer_norm_backward_rows(const T* x, const T* w, const double* stats, const T* dy, T* dx,
                              T* dw, T* db, int64_t rows, int64_t C, bool dx_adds = false);

// The same maths as plain loops, every sum in one running double: within 1e-12 of the
// kernels above in float64 (the order of the sums differs).
template <class T>
void layer_norm_rows_reference(const T* x, const T* w, const T* b, double eps, T* y,
                               double* stats, int64_t rows, int64_t C);
template <class T>
void layer_norm_backward_rows_reference(const T* x, const T* w, const double* stats, const T* dy,
                                        T* dx, T* dw, T* db, int64_t rows, int64_t C);

}  // namespace vg::kernels
