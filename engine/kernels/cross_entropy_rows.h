// Cross-entropy over rows of K logits: per-row losses and the logits' gradient, with class
// labels (and label smoothing) or with soft targets. Each row's log-sum-exp is max-subtracted
// and summed in double (row_sum's lanes); it is all backward needs to rebuild the softmax.
#pragma once

#include <cstdint>

namespace vg::kernels {

// lse[b] = log(sum_k exp(z[b, k])) for each of B rows of K.
template <class T>
void log_sum_exp_rows(const T* z, int64_t B, int64_t K, double* lse);

// With labels y and smoothing eps: lse[b] as above and
// loss[b] = lse[b] - (1 - eps) z[b, y_b] - eps * mean_k z[b, k].
template <class T>
void cross_entropy_rows(const T* z, const int32_t* labels, int64_t B, int64_t K,
                        double label_smoothing, double* lse, double* loss);

// dz = scale * (softmax(z) - q), q = (1 - eps) onehot(y) + eps / K.
template <class T>
void cross_entropy_grad_rows(const T* z, const int32_t* labels, const double* lse, int64_t B,
                             int64_t K, double label_smoothing, double scale, T* dz);

// With soft targets t: loss[b] = lse[b] * sum_k t[b, k] - sum_k t[b, k] z[b, k].
template <class T>
void soft_cross_entropy_rows(const T* z, const T* t, int64_t B, int64_t K, double* lse,
                             double* loss);

// dz = scale * (softmax(z) * sum(t) - t).
template <class T>
void soft_cross_entropy_grad_rows(const T* z, const T* t, const double* lse, int64_t B,
                                  int64_t K, double scale, T* dz);

// Plain loops with std::exp and one running double per sum: within 1e-12 of the kernels
// above in float64, within a few float ulps in float32.
template <class T>
void cross_entropy_rows_reference(const T* z, const int32_t* labels, int64_t B, int64_t K,
                                  double label_smoothing, double* lse, double* loss);

}  // namespace vg::kernels
