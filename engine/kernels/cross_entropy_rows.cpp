#include "engine/kernels/cross_entropy_rows.h"

#include <algorithm>
#include <cmath>

#include "engine/core/parallel.h"
#include "engine/kernels/row_sum.h"
#include "engine/kernels/vec_math.h"

namespace vg::kernels {

template <class T>
void log_sum_exp_rows(const T* z, int64_t B, int64_t K, double* lse) {
  parallel_for(B, vec::row_grain(K), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const T* zb = z + b * K;
      const T m = vec::row_max(zb, K);
      const double s = vec::row_sum(K, [&](int64_t k) { return vec::exp_of(T(zb[k] - m)); });
      lse[b] = double(m) + std::log(s);
    }
  });
}

template <class T>
void cross_entropy_rows(const T* z, const int32_t* labels, int64_t B, int64_t K,
                        double label_smoothing, double* lse, double* loss) {
  const double eps = label_smoothing;
  log_sum_exp_rows(z, B, K, lse);
  for (int64_t b = 0; b < B; ++b) {
    const double mean_z = vec::row_sum(K, [&](int64_t k) { return z[b * K + k]; }) / double(K);
    loss[b] = lse[b] - (1 - eps) * z[b * K + labels[b]] - eps * mean_z;
  }
}

template <class T>
void cross_entropy_grad_rows(const T* z, const int32_t* labels, const double* lse, int64_t B,
                             int64_t K, double label_smoothing, double scale, T* dz) {
  const double eps = label_smoothing;
  parallel_for(B, vec::row_grain(K), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      for (int64_t k = 0; k < K; ++k) {
        const double q = (k == labels[b] ? 1 - eps : 0.0) + eps / double(K);
        dz[b * K + k] = T(scale * (std::exp(z[b * K + k] - lse[b]) - q));
      }
    }
  });
}

template <class T>
void soft_cross_entropy_rows(const T* z, const T* t, int64_t B, int64_t K, double* lse,
                             double* loss) {
  log_sum_exp_rows(z, B, K, lse);
  for (int64_t b = 0; b < B; ++b) {
    const double sum_t = vec::row_sum(K, [&](int64_t k) { return t[b * K + k]; });
    const double sum_tz =
        vec::row_sum(K, [&](int64_t k) { return double(t[b * K + k]) * z[b * K + k]; });
    loss[b] = lse[b] * sum_t - sum_tz;
  }
}

template <class T>
void soft_cross_entropy_grad_rows(const T* z, const T* t, const double* lse, int64_t B,
                                  int64_t K, double scale, T* dz) {
  parallel_for(B, vec::row_grain(K), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const double sum_t = vec::row_sum(K, [&](int64_t k) { return t[b * K + k]; });
      for (int64_t k = 0; k < K; ++k) {
        const double p = std::exp(z[b * K + k] - lse[b]);
        dz[b * K + k] = T(scale * (p * sum_t - t[b * K + k]));
      }
    }
  });
}

template <class T>
void cross_entropy_rows_reference(const T* z, const int32_t* labels, int64_t B, int64_t K,
                                  double label_smoothing, double* lse, double* loss) {
  for (int64_t b = 0; b < B; ++b) {
    const T* zb = z + b * K;
    const double m = *std::max_element(zb, zb + K);
    double s = 0, sum_z = 0;
    for (int64_t k = 0; k < K; ++k) {
      s += std::exp(zb[k] - m);
      sum_z += zb[k];
    }
    lse[b] = m + std::log(s);
    loss[b] = lse[b] - (1 - label_smoothing) * zb[labels[b]] - label_smoothing * sum_z / double(K);
  }
}

#define VG_CROSS_ENTROPY_ROWS(T)                                                             \
  template void log_sum_exp_rows(const T*, int64_t, int64_t, double*);                       \
  template void cross_entropy_rows(const T*, const int32_t*, int64_t, int64_t, double,       \
                                   double*, double*);                                        \
  template void cross_entropy_grad_rows(const T*, const int32_t*, const double*, int64_t,    \
                                        int64_t, double, double, T*);                        \
  template void soft_cross_entropy_rows(const T*, const T*, int64_t, int64_t, double*,       \
                                        double*);                                            \
  template void soft_cross_entropy_grad_rows(const T*, const T*, const double*, int64_t,     \
                                             int64_t, double, T*);                           \
  template void cross_entropy_rows_reference(const T*, const int32_t*, int64_t, int64_t,     \
                                             double, double*, double*);
VG_CROSS_ENTROPY_ROWS(float)
VG_CROSS_ENTROPY_ROWS(double)
#undef VG_CROSS_ENTROPY_ROWS

}  // namespace vg::kernels
