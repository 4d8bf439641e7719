// Per-row scales of a (O, I) matrix, for a linear followed by LayerScale (s per output):
// s * W and s * G forward and for dW, and ds_o from G = dy^T a.
// Both are single in-order loops with no blocking or threads: they are their own plain
// reference (tests/engine/row_scale_test.cpp checks them against hand-computed values).
#pragma once

#include <cstdint>

namespace vg::kernels {

// out[o, i] = w[o, i] * s[o].
template <class T>
void scale_rows(const T* w, const T* s, T* out, int64_t O, int64_t I);

// ds[o] = sum_i w[o, i] G[o, i] (+ b[o] col[o] when b is not null), in double, i in order.
template <class T>
void scale_grad_rows(const T* w, const T* G, const T* b, const T* col, T* ds, int64_t O,
                     int64_t I);

}  // namespace vg::kernels
