// Softmax and log-softmax over rows of C values (the last axis), forward and backward. Sums
// are in double in row_sum's eight lanes; float uses vec::exp's polynomial, double libm's exp.
#pragma once

#include <cstdint>

namespace vg::kernels {

// y = exp(x - max) / sum, or with `log` y = x - max - log(sum), per row.
template <class T>
void softmax_rows(const T* x, T* y, int64_t rows, int64_t C, bool log);

// softmax: dx = y * (dy - sum(dy * y)); log_softmax: dx = dy - exp(y) * sum(dy).
template <class T>
void softmax_backward_rows(const T* y, const T* dy, T* dx, int64_t rows, int64_t C, bool log);

// Plain loops with std::exp and one running double sum: within a few float ulps of the
// kernels above (vec::exp's polynomial), within 1e-12 in float64.
template <class T>
void softmax_rows_reference(const T* x, T* y, int64_t rows, int64_t C, bool log);
template <class T>
void softmax_backward_rows_reference(const T* y, const T* dy, T* dx, int64_t rows, int64_t C,
                                     bool log);

}  // namespace vg::kernels
