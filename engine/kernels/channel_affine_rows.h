// y = x * scale + shift per channel (the last axis), and its backward, whose parameter sums
// run over every row. Those sums are in double, in blocks of rows fixed by the row count
// alone and added in block order: the same bits at any thread count.
#pragma once

#include <cstdint>

namespace vg::kernels {

// y[r, c] = x[r, c] * scale[c] (+ shift[c] when shift is not null).
template <class T>
void channel_affine_rows(const T* x, const T* scale, const T* shift, T* y, int64_t rows,
                         int64_t C);

// The same on the calling thread: for a product that scales each block of its rows as it
// stores them (made_rows.h RowsDone).
template <class T>
void channel_affine_block(const T* x, const T* scale, const T* shift, T* y, int64_t rows,
                          int64_t C);

// The forward as one plain loop over all rows: the same bits (each element is one product
// and one sum, in the same order).
template <class T>
void channel_affine_rows_reference(const T* x, const T* scale, const T* shift, T* y,
                                   int64_t rows, int64_t C);

// dx = dy * scale; dscale = sum_rows dy * x; dshift = sum_rows dy. dx, dscale and dshift may
// each be null (not needed); x is read only for dscale. With dx_adds, dx holds a gradient x
// has already received and each element becomes that + its own dx: the bits of storing dx and
// adding the two arrays after.
template <class T>
void channel_affine_backward_rows(const T* dy, const T* x, const T* scale, T* dx, T* dscale,
                                  T* dshift, int64_t rows, int64_t C, bool dx_adds = false);

// The backward as a plain loop, each sum one running double over the rows: the same dx,
// parameter sums within 1e-12 in float64 (their order differs).
template <class T>
void channel_affine_backward_rows_reference(const T* dy, const T* x, const T* scale, T* dx,
                                            T* dscale, T* dshift, int64_t rows, int64_t C);

}  // namespace vg::kernels
