// The loops behind elementwise ops: a function applied to every element of one array, or of
// two arrays of one shape or broadcast to one, and a unary op's backward (the output
// gradient times the derivative). The function comes from the op (ops/elementwise.cpp's
// table of values and derivatives); these only walk the memory, split over threads. Each
// element is computed alone, so the bits do not depend on the thread count.
#pragma once

#include <cstdint>

#include "engine/core/parallel.h"
#include "engine/kernels/broadcast_runs.h"

namespace vg::kernels {

// out[i] = f(a[i]).
template <class T, class F>
void map_elements(const T* a, T* out, int64_t n, F f) {
  parallel_for(n, 1 << 14, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) out[i] = f(a[i]);
  });
}

// gx[i] = g[i] * derivative(x[i], y[i]), y the op's output.
template <class T, class D>
void times_derivative(const T* x, const T* y, const T* g, T* gx, int64_t n, D derivative) {
  parallel_for(n, 1 << 14, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) gx[i] = g[i] * derivative(x[i], y[i]);
  });
}

// out[i] = f(a[i], b[i]), a and b of one shape.
template <class T, class F>
void zip_elements(const T* a, const T* b, T* out, int64_t n, F f) {
  parallel_for(n, 1 << 15, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) out[i] = f(a[i], b[i]);
  });
}

// out = f(a, b) over the plan's broadcast shape.
template <class T, class F>
void zip_broadcast(const BroadcastPlan& plan, const T* a, const T* b, T* out, F f) {
  for_each_broadcast_run(plan,
                         [&](int64_t o, int64_t ia, int64_t ib, int64_t n, int64_t da, int64_t db) {
                           for (int64_t k = 0; k < n; ++k)
                             out[o + k] = f(a[ia + k * da], b[ib + k * db]);
                         });
}

// out = a repeated over the plan's broadcast shape (plan made for a against out itself).
template <class T>
void broadcast_copy(const BroadcastPlan& plan, const T* a, T* out) {
  for_each_broadcast_run(plan, [&](int64_t o, int64_t ia, int64_t, int64_t n, int64_t da, int64_t) {
    for (int64_t k = 0; k < n; ++k) out[o + k] = a[ia + k * da];
  });
}

// zip_broadcast as one plain loop over the output's multi-index, no plan: the same bits.
template <class T, class F>
void zip_broadcast_reference(const T* a, const Shape& a_shape, const T* b, const Shape& b_shape,
                             T* out, const Shape& out_shape, F f) {
  const int64_t rank = static_cast<int64_t>(out_shape.size());
  // Offset of an operand at output index i, by its own row-major layout, size-1 axes pinned.
  auto offset_of = [&](const Shape& s, int64_t i) {
    int64_t offset = 0, stride = 1;
    for (int64_t ax = rank - 1, k = static_cast<int64_t>(s.size()) - 1; k >= 0; --ax, --k) {
      const int64_t idx = i % out_shape[ax];
      i /= out_shape[ax];
      if (s[k] != 1) offset += idx * stride;
      stride *= s[k];
    }
    return offset;
  };
  for (int64_t i = 0; i < shape_numel(out_shape); ++i)
    out[i] = f(a[offset_of(a_shape, i)], b[offset_of(b_shape, i)]);
}

}  // namespace vg::kernels
