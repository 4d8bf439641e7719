#include "engine/kernels/attention_head.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "engine/kernels/attention_rows.h"
#include "engine/kernels/blas.h"
#include "engine/kernels/row_sum.h"
#include "engine/kernels/vec_math.h"

namespace vg::kernels {
namespace {

// Row-major C (m x n) = alpha * op(A) op(B), op = transpose when ta / tb: one head's
// product, small enough for the engine's own kernel (kernels/blas.h).
template <class T>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const T* a, int64_t lda,
          const T* b, int64_t ldb, T* c, int64_t ldc) {
  vg::gemm_small(ta, tb, m, n, k, T(alpha), a, lda, b, ldb, T(0), c, ldc);
}

// One row of the softmax in place: subtract the max, exponentiate, divide by the sum.
template <class T>
void softmax_row(T* row, int64_t n) {
  const T m = vec::row_max(row, n);
  for (int64_t j = 0; j < n; ++j) row[j] = vec::exp_of(row[j] - m);
  const T inv = T(1.0 / vec::row_sum(n, [&](int64_t j) { return row[j]; }));
  for (int64_t j = 0; j < n; ++j) row[j] *= inv;
}

// P = softmax of each of the Tq rows of S (Tk entries each), in place.
template <class T>
void softmax_rows(T* p, int64_t Tq, int64_t Tk) {
  if constexpr (std::is_same_v<T, float> && detail::kAttentionRowsAvx512)
    return detail::softmax_rows_avx512(p, Tq, Tk);
  for (int64_t i = 0; i < Tq; ++i) softmax_row(p + i * Tk, Tk);
}

// dS = P * (dP - D_i) in place of dP, D_i = sum_j dP_ij P_ij in double.
template <class T>
void softmax_grad_rows(const T* p, T* ds, int64_t Tq, int64_t Tk) {
  if constexpr (std::is_same_v<T, float> && detail::kAttentionRowsAvx512)
    return detail::softmax_grad_rows_avx512(p, ds, Tq, Tk);
  for (int64_t i = 0; i < Tq; ++i) {
    const T* pi = p + i * Tk;
    T* di = ds + i * Tk;
    const double row_dot = vec::row_sum(Tk, [&](int64_t j) { return double(di[j]) * pi[j]; });
    for (int64_t j = 0; j < Tk; ++j) di[j] = pi[j] * (di[j] - T(row_dot));
  }
}

}  // namespace

template <class T>
void attention_head_forward(HeadView<const T> q, HeadView<const T> k, HeadView<const T> v, T* p,
                            HeadView<T> o, int64_t Tq, int64_t Tk, int64_t D, double scale) {
  gemm(false, true, Tq, Tk, D, scale, q.data, q.ld, k.data, k.ld, p, Tk);  // S = s Q K^T
  softmax_rows(p, Tq, Tk);                                                 // P
  gemm(false, false, Tq, D, Tk, 1.0, p, Tk, v.data, v.ld, o.data, o.ld);   // O = P V
}

template <class T>
void attention_head_backward(HeadView<const T> q, HeadView<const T> k, HeadView<const T> v,
                             const T* p, HeadView<const T> dout, HeadView<T> dq, HeadView<T> dk,
                             HeadView<T> dv, T* ds, int64_t Tq, int64_t Tk, int64_t D,
                             double scale) {
  if (dv.data) gemm(true, false, Tk, D, Tq, 1.0, p, Tk, dout.data, dout.ld, dv.data, dv.ld);
  if (!dq.data && !dk.data) return;
  gemm(false, true, Tq, Tk, D, 1.0, dout.data, dout.ld, v.data, v.ld, ds, Tk);  // dP
  softmax_grad_rows(p, ds, Tq, Tk);                                             // dS
  if (dq.data) gemm(false, false, Tq, D, Tk, scale, ds, Tk, k.data, k.ld, dq.data, dq.ld);
  if (dk.data) gemm(true, false, Tk, D, Tq, scale, ds, Tk, q.data, q.ld, dk.data, dk.ld);
}

template <class T>
void attention_head_forward_reference(HeadView<const T> q, HeadView<const T> k,
                                      HeadView<const T> v, T* p, HeadView<T> o, int64_t Tq,
                                      int64_t Tk, int64_t D, double scale) {
  std::vector<double> s(Tk);
  for (int64_t i = 0; i < Tq; ++i) {
    for (int64_t j = 0; j < Tk; ++j) {
      double dot = 0;
      for (int64_t d = 0; d < D; ++d) dot += double(q.data[i * q.ld + d]) * k.data[j * k.ld + d];
      s[j] = scale * dot;
    }
    const double m = *std::max_element(s.begin(), s.end());
    double sum = 0;
    for (int64_t j = 0; j < Tk; ++j) sum += std::exp(s[j] - m);
    for (int64_t j = 0; j < Tk; ++j) p[i * Tk + j] = T(std::exp(s[j] - m) / sum);
    for (int64_t d = 0; d < D; ++d) {
      double acc = 0;
      for (int64_t j = 0; j < Tk; ++j) acc += double(p[i * Tk + j]) * v.data[j * v.ld + d];
      o.data[i * o.ld + d] = T(acc);
    }
  }
}

template <class T>
void attention_head_backward_reference(HeadView<const T> q, HeadView<const T> k,
                                       HeadView<const T> v, const T* p, HeadView<const T> dout,
                                       HeadView<T> dq, HeadView<T> dk, HeadView<T> dv, int64_t Tq,
                                       int64_t Tk, int64_t D, double scale) {
  auto P = [&](int64_t i, int64_t j) { return double(p[i * Tk + j]); };
  auto dO = [&](int64_t i, int64_t d) { return double(dout.data[i * dout.ld + d]); };
  std::vector<double> dS(Tq * Tk);
  for (int64_t i = 0; i < Tq; ++i) {
    std::vector<double> dP(Tk);
    double Di = 0;
    for (int64_t j = 0; j < Tk; ++j) {
      for (int64_t d = 0; d < D; ++d) dP[j] += dO(i, d) * double(v.data[j * v.ld + d]);
      Di += dP[j] * P(i, j);
    }
    for (int64_t j = 0; j < Tk; ++j) dS[i * Tk + j] = P(i, j) * (dP[j] - Di);
  }
  for (int64_t d = 0; d < D; ++d) {
    for (int64_t j = 0; j < Tk; ++j) {
      double sv = 0, sk = 0;
      for (int64_t i = 0; i < Tq; ++i) {
        sv += P(i, j) * dO(i, d);
        sk += dS[i * Tk + j] * double(q.data[i * q.ld + d]);
      }
      if (dv.data) dv.data[j * dv.ld + d] = T(sv);
      if (dk.data) dk.data[j * dk.ld + d] = T(scale * sk);
    }
    for (int64_t i = 0; dq.data && i < Tq; ++i) {
      double sq = 0;
      for (int64_t j = 0; j < Tk; ++j) sq += dS[i * Tk + j] * double(k.data[j * k.ld + d]);
      dq.data[i * dq.ld + d] = T(scale * sq);
    }
  }
}

#define VG_ATTENTION_HEAD(T)                                                                   \
  template void attention_head_forward(HeadView<const T>, HeadView<const T>, HeadView<const T>, \
                                       T*, HeadView<T>, int64_t, int64_t, int64_t, double);     \
  template void attention_head_backward(HeadView<const T>, HeadView<const T>,                  \
                                        HeadView<const T>, const T*, HeadView<const T>,         \
                                        HeadView<T>, HeadView<T>, HeadView<T>, T*, int64_t,     \
                                        int64_t, int64_t, double);                              \
  template void attention_head_forward_reference(HeadView<const T>, HeadView<const T>,         \
                                                 HeadView<const T>, T*, HeadView<T>, int64_t,   \
                                                 int64_t, int64_t, double);                     \
  template void attention_head_backward_reference(                                             \
      HeadView<const T>, HeadView<const T>, HeadView<const T>, const T*, HeadView<const T>,     \
      HeadView<T>, HeadView<T>, HeadView<T>, int64_t, int64_t, int64_t, double);
VG_ATTENTION_HEAD(float)
VG_ATTENTION_HEAD(double)
#undef VG_ATTENTION_HEAD

}  // namespace vg::kernels
