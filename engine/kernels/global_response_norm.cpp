#include "engine/kernels/global_response_norm.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/core/parallel.h"
#include "engine/kernels/bf16_gemm.h"
#include "engine/kernels/bf16_gemm_parts.h"
#include "engine/kernels/gelu_slope.h"
#include "engine/kernels/scratch.h"

namespace vg::kernels {
namespace {

// Samples per thread so that each thread gets about 32k elements.
int64_t grain_for(int64_t elements_per_item) {
  return std::max<int64_t>(1, 32768 / std::max<int64_t>(1, elements_per_item));
}

// One sample's S x C values x into y; its norms and n into norm_b and n_b (C each), its
// divisor into *divisor_b.
template <class T>
void grn_sample(const T* x, const T* gamma, const T* beta, double eps, T* y, double* norm_b,
                double* n_b, double* divisor_b, int64_t S, int64_t C) {
  std::fill(norm_b, norm_b + C, 0.0);
  for (int64_t s = 0; s < S; ++s) {  // sums of squares over s in order
    const T* xr = x + s * C;
    for (int64_t c = 0; c < C; ++c) norm_b[c] += double(xr[c]) * double(xr[c]);
  }
  double mu = 0;
  for (int64_t c = 0; c < C; ++c) {
    norm_b[c] = std::sqrt(norm_b[c]);
    mu += norm_b[c];
  }
  *divisor_b = mu / double(C) + eps;
  for (int64_t c = 0; c < C; ++c) n_b[c] = norm_b[c] / *divisor_b;
  // The output in the order of the reference: x + (beta + gamma * (x * n)).
  for (int64_t s = 0; s < S; ++s) {
    const T* xr = x + s * C;
    T* yr = y + s * C;
    for (int64_t c = 0; c < C; ++c)
      yr[c] = xr[c] + (beta[c] + gamma[c] * (xr[c] * static_cast<T>(n_b[c])));
  }
}

}  // namespace

template <class T>
void global_response_norm_samples(const T* x, const T* gamma, const T* beta, double eps, T* y,
                                  double* stats, int64_t B, int64_t S, int64_t C) {
  double *norm = stats, *n = norm + B * C, *divisor = n + B * C;
  parallel_for(B, grain_for(S * C), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b)
      grn_sample(x + b * S * C, gamma, beta, eps, y + b * S * C, norm + b * C, n + b * C,
                 divisor + b, S, C);
  });
}

template <class T>
void gelu_grn_samples(const T* h, bool tanh_form, const T* gamma, const T* beta, double eps,
                      T* a, T* slope, T* y, double* stats, int64_t B, int64_t S, int64_t C) {
  double *norm = stats, *n = norm + B * C, *divisor = n + B * C;
  parallel_for(B, grain_for(S * C), [&](int64_t b0, int64_t b1) {
    thread_local std::vector<T> scratch;  // a sample's GELU values when `a` is not kept
    if (!a) scratch.resize(size_t(S * C));
    for (int64_t b = b0; b < b1; ++b) {
      T* ab = a ? a + b * S * C : scratch.data();
      gelu_block(h + b * S * C, ab, slope ? slope + b * S * C : nullptr, S * C, tanh_form);
      grn_sample(ab, gamma, beta, eps, y + b * S * C, norm + b * C, n + b * C, divisor + b, S, C);
    }
  });
}

void gelu_grn_samples_bf16(const float* h, bool tanh_form, const float* gamma, const float* beta,
                           double eps, float* a, float* slope, uint32_t* y_words, double* stats,
                           int64_t B, int64_t S, int64_t C) {
  double *norm = stats, *n = norm + B * C, *divisor = n + B * C;
  const int64_t pairs = (C + 1) / 2;
  parallel_for(B, grain_for(S * C), [&](int64_t b0, int64_t b1) {
    thread_local std::vector<float> scratch, y;  // a sample's GELU values and output, in cache
    if (!a) scratch.resize(size_t(S * C));
    y.resize(size_t(S * C));
    for (int64_t b = b0; b < b1; ++b) {
      float* ab = a ? a + b * S * C : scratch.data();
      gelu_block(h + b * S * C, ab, slope ? slope + b * S * C : nullptr, S * C, tanh_form);
      grn_sample(ab, gamma, beta, eps, y.data(), norm + b * C, n + b * C, divisor + b, S, C);
      for (int64_t s = 0; s < S; ++s)
        detail::bf16_pairs_of_row(y.data() + s * C, C, y_words + (b * S + s) * pairs);
    }
  });
}

namespace {

// Sample b's part of the backward, from its dy, x and forward statistics: its sums
// P_c = sum_s G x and Q_c = sum_s G into Pb and Qb and, where dx is given, its dx (times
// dx_scale where that is given). dx may be dy's memory: each element is read before it is
// written. direct and through_norm are C doubles of scratch.
template <class T>
void grn_backward_sample(const T* dy, const T* x, const T* gamma, const double* norm_b,
                         const double* n_b, double divisor_b, T* dx, const T* dx_scale,
                         double* Pb, double* Qb, double* direct, double* through_norm, int64_t S,
                         int64_t C) {
  std::fill(Pb, Pb + C, 0.0);
  std::fill(Qb, Qb + C, 0.0);
  for (int64_t s = 0; s < S; ++s) {
    const T *gr = dy + s * C, *xr = x + s * C;
    for (int64_t c = 0; c < C; ++c) {
      Pb[c] += double(gr[c]) * double(xr[c]);
      Qb[c] += double(gr[c]);
    }
  }
  if (!dx) return;
  double an = 0;
  for (int64_t c = 0; c < C; ++c) an += double(gamma[c]) * Pb[c] * n_b[c];
  an /= double(C);
  for (int64_t c = 0; c < C; ++c) {
    const double dL_dg = (double(gamma[c]) * Pb[c] - an) / divisor_b;
    direct[c] = 1.0 + double(gamma[c]) * n_b[c];
    through_norm[c] = norm_b[c] > 0 ? dL_dg / norm_b[c] : 0.0;
  }
  for (int64_t s = 0; s < S; ++s) {
    const T *gr = dy + s * C, *xr = x + s * C;
    T* dr = dx + s * C;
    for (int64_t c = 0; c < C; ++c)
      dr[c] = static_cast<T>(double(gr[c]) * direct[c] + double(xr[c]) * through_norm[c]);
    if (!dx_scale) continue;
    const T* sr = dx_scale + s * C;
    for (int64_t c = 0; c < C; ++c) dr[c] = dr[c] * sr[c];
  }
}

// d beta_c = sum_{b,s} G = sum_b Q_bc;  d gamma_c = sum_{b,s} G*x*n_c = sum_b n_bc P_bc.
template <class T>
void grn_param_grads(const double* P, const double* Q, const double* n, T* dgamma, T* dbeta,
                     int64_t B, int64_t C) {
  for (int64_t c = 0; c < C; ++c) {
    double db = 0, dg = 0;
    for (int64_t b = 0; b < B; ++b) {
      db += Q[b * C + c];
      dg += n[b * C + c] * P[b * C + c];
    }
    if (dbeta) dbeta[c] = static_cast<T>(db);
    if (dgamma) dgamma[c] = static_cast<T>(dg);
  }
}

}  // namespace

template <class T>
void global_response_norm_backward_samples(const T* dy, const T* x, const T* gamma,
                                           const double* stats, T* dx, T* dgamma, T* dbeta,
                                           int64_t B, int64_t S, int64_t C, const T* dx_scale) {
  const double *norm = stats, *n = norm + B * C, *divisor = n + B * C;
  std::vector<double> P(B * C), Q(B * C);  // per (b, c): dL/dn_c = gamma_c * P
  // One sample at a time, as in the forward: its G and x are read from memory once for the
  // sums and again from L2 for dx.
  parallel_for(B, grain_for(S * C), [&](int64_t b0, int64_t b1) {
    std::vector<double> direct(C), through_norm(C);
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t at = b * S * C;
      grn_backward_sample(dy + at, x + at, gamma, norm + b * C, n + b * C, divisor[b],
                          dx ? dx + at : nullptr, dx_scale ? dx_scale + at : nullptr,
                          P.data() + b * C, Q.data() + b * C, direct.data(),
                          through_norm.data(), S, C);
    }
  });
  grn_param_grads(P.data(), Q.data(), n, dgamma, dbeta, B, C);
}

namespace {

// The backward of GRN(GELU(h)) from h, one sample at a time: the sample's GELU values and
// slope and GRN's statistics are made again into per-thread blocks that stay in cache, with
// gelu_grn_samples' bits, and its output into `a` where that is given (else into a per-thread
// block); take_output(b, y) then gets the sample's output; then GRN's backward
// (grn_backward_sample) turns dy into dh in place, GELU's slope applied, unless need_dh is
// false. Memory sees h and dy read and dh and the output written, once each.
template <class T, class TakeOutput>
void gelu_grn_backward_by_sample(const T* h, bool tanh_form, const T* gamma, const T* beta,
                                 double eps, T* a, T* dy, bool need_dh, T* dgamma, T* dbeta,
                                 int64_t B, int64_t S, int64_t C, TakeOutput&& take_output) {
  std::vector<double> P(B * C), Q(B * C), n(B * C);
  parallel_for(B, grain_for(S * C), [&](int64_t b0, int64_t b1) {
    thread_local std::vector<T> act, slope, y;  // the sample's, grown once per shape
    for (auto* block : {&act, &slope, &y})
      if (block != &y || !a) grow(*block, S * C);
    std::vector<double> norm(C), direct(C), through_norm(C);
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t at = b * S * C;
      T* yb = a ? a + at : y.data();
      double divisor = 0;
      gelu_block(h + at, act.data(), slope.data(), S * C, tanh_form);
      grn_sample(act.data(), gamma, beta, eps, yb, norm.data(), n.data() + b * C, &divisor, S, C);
      take_output(b, static_cast<const T*>(yb));
      grn_backward_sample(dy + at, act.data(), gamma, norm.data(), n.data() + b * C, divisor,
                          need_dh ? dy + at : nullptr, slope.data(), P.data() + b * C,
                          Q.data() + b * C, direct.data(), through_norm.data(), S, C);
    }
  });
  grn_param_grads(P.data(), Q.data(), n.data(), dgamma, dbeta, B, C);
}

}  // namespace

template <class T>
void gelu_grn_backward_samples(const T* h, bool tanh_form, const T* gamma, const T* beta,
                               double eps, T* a, T* dy, bool need_dh, T* dgamma, T* dbeta,
                               int64_t B, int64_t S, int64_t C) {
  gelu_grn_backward_by_sample(h, tanh_form, gamma, beta, eps, a, dy, need_dh, dgamma, dbeta, B,
                              S, C, [](int64_t, const T*) {});
}

void gelu_grn_backward_samples_bf16(const float* h, bool tanh_form, const float* gamma,
                                    const float* beta, double eps, uint32_t* a_words,
                                    bool row_pairs, float* dy, bool need_dh, float* dgamma,
                                    float* dbeta, int64_t B, int64_t S, int64_t C) {
  const int64_t pairs = (C + 1) / 2, pair_ld = Bf16Rows::row_pairs_ld(C);
  gelu_grn_backward_by_sample(
      h, tanh_form, gamma, beta, eps, static_cast<float*>(nullptr), dy, need_dh, dgamma, dbeta,
      B, S, C, [&](int64_t b, const float* y) {
        for (int64_t s = 0; s < S; s += row_pairs ? 2 : 1) {
          const int64_t r = b * S + s;
          if (row_pairs)
            detail::bf16_pair_row(y + s * C, y + (s + 1) * C, C, pair_ld,
                                  a_words + (r / 2) * pair_ld);
          else
            detail::bf16_pairs_of_row(y + s * C, C, a_words + r * pairs);
        }
      });
}

template <class T>
void global_response_norm_samples_reference(const T* x, const T* gamma, const T* beta,
                                            double eps, T* y, double* stats, int64_t B,
                                            int64_t S, int64_t C) {
  double *norm = stats, *n = norm + B * C, *divisor = n + B * C;
  for (int64_t b = 0; b < B; ++b) {
    double mu = 0;
    for (int64_t c = 0; c < C; ++c) {
      double sq = 0;
      for (int64_t s = 0; s < S; ++s) sq += double(x[(b * S + s) * C + c]) * x[(b * S + s) * C + c];
      norm[b * C + c] = std::sqrt(sq);
      mu += norm[b * C + c];
    }
    divisor[b] = mu / double(C) + eps;
    for (int64_t c = 0; c < C; ++c) {
      n[b * C + c] = norm[b * C + c] / divisor[b];
      for (int64_t s = 0; s < S; ++s) {
        const T xv = x[(b * S + s) * C + c];
        y[(b * S + s) * C + c] = xv + (beta[c] + gamma[c] * (xv * static_cast<T>(n[b * C + c])));
      }
    }
  }
}

template <class T>
void global_response_norm_backward_samples_reference(const T* dy, const T* x, const T* gamma,
                                                     const double* stats, T* dx, T* dgamma,
                                                     T* dbeta, int64_t B, int64_t S, int64_t C) {
  const double *norm = stats, *n = norm + B * C, *divisor = n + B * C;
  auto at = [&](int64_t b, int64_t s, int64_t c) { return (b * S + s) * C + c; };
  for (int64_t c = 0; c < C; ++c) {
    double dg = 0, db = 0;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t s = 0; s < S; ++s) {
        dg += double(dy[at(b, s, c)]) * double(x[at(b, s, c)]) * n[b * C + c];
        db += double(dy[at(b, s, c)]);
      }
    if (dgamma) dgamma[c] = T(dg);
    if (dbeta) dbeta[c] = T(db);
  }
  if (!dx) return;
  std::vector<double> a(C);
  for (int64_t b = 0; b < B; ++b) {
    double mean_an = 0;  // mean_c(a_c n_c)
    for (int64_t c = 0; c < C; ++c) {
      double gx = 0;
      for (int64_t s = 0; s < S; ++s) gx += double(dy[at(b, s, c)]) * double(x[at(b, s, c)]);
      a[c] = double(gamma[c]) * gx;
      mean_an += a[c] * n[b * C + c] / double(C);
    }
    for (int64_t c = 0; c < C; ++c) {
      const double g = norm[b * C + c], dL_dg = (a[c] - mean_an) / divisor[b];
      for (int64_t s = 0; s < S; ++s)
        dx[at(b, s, c)] = T(double(dy[at(b, s, c)]) * (1 + double(gamma[c]) * n[b * C + c]) +
                            (g > 0 ? double(x[at(b, s, c)]) * dL_dg / g : 0.0));
    }
  }
}

#define VG_GRN(T)                                                                             \
  template void global_response_norm_samples(const T*, const T*, const T*, double, T*, double*, \
                                             int64_t, int64_t, int64_t);                        \
  template void global_response_norm_backward_samples(const T*, const T*, const T*,            \
                                                      const double*, T*, T*, T*, int64_t,       \
                                                      int64_t, int64_t, const T*);              \
  template void gelu_grn_samples(const T*, bool, const T*, const T*, double, T*, T*, T*,       \
                                 double*, int64_t, int64_t, int64_t);                           \
  template void gelu_grn_backward_samples(const T*, bool, const T*, const T*, double, T*, T*,   \
                                          bool, T*, T*, int64_t, int64_t, int64_t);             \
  template void global_response_norm_samples_reference(const T*, const T*, const T*, double,   \
                                                       T*, double*, int64_t, int64_t, int64_t); \
  template void global_response_norm_backward_samples_reference(                               \
      const T*, const T*, const T*, const double*, T*, T*, T*, int64_t, int64_t, int64_t);
VG_GRN(float)
VG_GRN(double)
#undef VG_GRN

}  // namespace vg::kernels
