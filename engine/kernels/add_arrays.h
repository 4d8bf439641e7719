// out[i] = a[i] + b[i]: how autograd adds up the gradients an input receives. out may be a or b.
#pragma once

#include <cstdint>

#include "engine/core/parallel.h"

namespace vg::kernels {

template <class T>
void add_arrays(const T* a, const T* b, T* out, int64_t n) {
  parallel_for(n, 1 << 15, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) out[i] = a[i] + b[i];
  });
}

}  // namespace vg::kernels
