#include "engine/kernels/gelu_slope.h"

#include <algorithm>
#include <vector>

#include "engine/core/parallel.h"
#include "engine/kernels/bf16_gemm.h"
#include "engine/kernels/bf16_gemm_parts.h"
#include "engine/kernels/gelu_math.h"
#include "engine/kernels/scratch.h"

namespace vg::kernels {

namespace {

// a[i] = gelu(h[i]), then use_slope(i, gelu'(h[i])) for i in [i0, i1), on the calling thread:
// the one loop behind every entry point, so that storing the slope and applying it at once
// see the same values.
template <class T, class UseSlope>
void gelu_range(const T* h, T* a, int64_t i0, int64_t i1, bool tanh_form, UseSlope use_slope) {
  using namespace gelu_math;
  if (!tanh_form) {
    for (int64_t i = i0; i < i1; ++i) {
      const T x = h[i], cdf = Phi(x);
      a[i] = x * cdf;
      use_slope(i, cdf + x * phi(x));
    }
  } else {
    for (int64_t i = i0; i < i1; ++i) {
      a[i] = tanh_value(h[i]);
      use_slope(i, tanh_derivative(h[i]));
    }
  }
}

// One row of `cols`: a = gelu(h) and d = d_in * gelu'(h), d_in a row a product handed over.
void gelu_grad_row(const float* h, const float* d_in, float* d, float* a, int64_t cols,
                   bool tanh_form) {
  gelu_range(h, a, 0, cols, tanh_form, [d_in, d](int64_t j, float s) { d[j] = d_in[j] * s; });
}

template <class T, class UseSlope>
void gelu_values_and_slopes(const T* h, T* a, int64_t n, bool tanh_form, UseSlope use_slope) {
  parallel_for(n, 1 << 14, [&](int64_t i0, int64_t i1) {
    gelu_range(h, a, i0, i1, tanh_form, use_slope);
  });
}

}  // namespace

template <class T>
void gelu_with_slope(const T* h, T* a, T* slope, int64_t n, bool tanh_form) {
  gelu_values_and_slopes(h, a, n, tanh_form, [slope](int64_t i, T s) { slope[i] = s; });
}

template <class T>
void gelu_with_grad(const T* h, T* a, T* d, int64_t n, bool tanh_form) {
  gelu_values_and_slopes(h, a, n, tanh_form, [d](int64_t i, T s) { d[i] = d[i] * s; });
}

void gelu_with_grad_rows(const float* h, const float* d_rows, float* d, float* a, int64_t r0,
                         int64_t r1, int64_t cols, bool tanh_form) {
  for (int64_t r = r0; r < r1; ++r)
    gelu_grad_row(h + r * cols, d_rows + (r - r0) * cols, d + r * cols, a + r * cols, cols,
                  tanh_form);
}

void gelu_with_grad_bf16_rows(const float* h, const float* d_rows, float* d, uint32_t* words,
                              int64_t r0, int64_t r1, int64_t rows, int64_t cols, bool tanh_form) {
  const int64_t ld = Bf16Rows::row_pairs_ld(cols);
  thread_local std::vector<float> values;  // two rows', grown once per shape
  grow(values, 2 * cols);
  // Rows 2p and 2p + 1 (2p alone at an odd end): their values into `values`, in cache, their
  // gradients into d, then the pair's words.
  for (int64_t first = r0; first < r1; first += 2) {
    const int64_t count = std::min<int64_t>(2, rows - first);
    for (int64_t i = 0; i < count; ++i)
      gelu_grad_row(h + (first + i) * cols, d_rows + (first - r0 + i) * cols,
                    d + (first + i) * cols, values.data() + i * cols, cols, tanh_form);
    detail::bf16_pair_row(values.data(), count == 2 ? values.data() + cols : nullptr, cols, ld,
                          words + first / 2 * ld);
  }
}

void gelu_with_grad_bf16(const float* h, uint32_t* words, float* d, int64_t rows, int64_t cols,
                         bool tanh_form) {
  parallel_for((rows + 1) / 2, std::max<int64_t>(1, (1 << 13) / std::max<int64_t>(cols, 1)),
               [&](int64_t p0, int64_t p1) {
                 gelu_with_grad_bf16_rows(h, d + 2 * p0 * cols, d, words, 2 * p0,
                                          std::min(rows, 2 * p1), rows, cols, tanh_form);
               });
}

template <class T>
void gelu_block(const T* h, T* a, T* slope, int64_t n, bool tanh_form) {
  using namespace gelu_math;
  if (slope) {
    gelu_range(h, a, 0, n, tanh_form, [slope](int64_t i, T s) { slope[i] = s; });
  } else if (!tanh_form) {
    for (int64_t i = 0; i < n; ++i) a[i] = erf_value(h[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) a[i] = tanh_value(h[i]);
  }
}

template <class T>
void multiply_by_slope(T* d, const T* slope, int64_t n) {
  parallel_for(n, 1 << 15, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) d[i] = d[i] * slope[i];
  });
}

template void gelu_with_slope(const float*, float*, float*, int64_t, bool);
template void gelu_with_slope(const double*, double*, double*, int64_t, bool);
template void gelu_with_grad(const float*, float*, float*, int64_t, bool);
template void gelu_with_grad(const double*, double*, double*, int64_t, bool);
template void gelu_block(const float*, float*, float*, int64_t, bool);
template void gelu_block(const double*, double*, double*, int64_t, bool);
template void multiply_by_slope(float*, const float*, int64_t);
template void multiply_by_slope(double*, const double*, int64_t);

}  // namespace vg::kernels
