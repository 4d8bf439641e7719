// out[i] = a[i] * b[i]: dropout's multiply by its mask of scales.
#pragma once

#include <cstdint>

#include "engine/core/parallel.h"

namespace vg::kernels {

template <class T>
void mul_arrays(const T* a, const T* b, T* out, int64_t n) {
  parallel_for(n, 1 << 15, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) out[i] = a[i] * b[i];
  });
}

// The same as one serial loop: the same bits.
template <class T>
void mul_arrays_reference(const T* a, const T* b, T* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] * b[i];
}

}  // namespace vg::kernels
