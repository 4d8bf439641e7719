#include "engine/kernels/global_response_norm.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/core/parallel.h"
#include "engine/kernels/bf16_gemm_parts.h"
#include "engine/kernels/gelu_slope.h"

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

template <class T>
void global_response_norm_backward_samples(const T* dy, const T* x, const T* gamma,
                                           const double* stats, T* dx, T* dgamma, T* dbeta,
                                           int64_t B, int64_t S, int64_t C, const T* dx_scale) {
  const double *norm = stats, *n = norm + B * C, *divisor = n + B * C;
  // Per (b, c): P = sum_s G*x (so dL/dn_c = gamma_c * P) and Q = sum_s G.
  std::vector<double> P(B * C, 0.0), Q(B * C, 0.0);
  // One sample at a time, as in the forward: its G and x are read from memory once for the
  // sums and again from L2 for dx.
  parallel_for(B, grain_for(S * C), [&](int64_t b0, int64_t b1) {
    std::vector<double> direct(C), through_norm(C);
    for (int64_t b = b0; b < b1; ++b) {
      double *Pb = P.data() + b * C, *Qb = Q.data() + b * C;
      for (int64_t s = 0; s < S; ++s) {
        const T *gr = dy + (b * S + s) * C, *xr = x + (b * S + s) * C;
        for (int64_t c = 0; c < C; ++c) {
          Pb[c] += double(gr[c]) * double(xr[c]);
          Qb[c] += double(gr[c]);
        }
      }
      if (!dx) continue;
      const double* nb = n + b * C;
      double an = 0;
      for (int64_t c = 0; c < C; ++c) an += double(gamma[c]) * Pb[c] * nb[c];
      an /= double(C);
      for (int64_t c = 0; c < C; ++c) {
        const double dL_dg = (double(gamma[c]) * Pb[c] - an) / divisor[b];
        const double g = norm[b * C + c];
        direct[c] = 1.0 + double(gamma[c]) * nb[c];
        through_norm[c] = g > 0 ? dL_dg / g : 0.0;
      }
      for (int64_t s = 0; s < S; ++s) {
        const T *gr = dy + (b * S + s) * C, *xr = x + (b * S + s) * C;
        T* dr = dx + (b * S + s) * C;
        for (int64_t c = 0; c < C; ++c)
          dr[c] = static_cast<T>(double(gr[c]) * direct[c] + double(xr[c]) * through_norm[c]);
        if (!dx_scale) continue;
        const T* sr = dx_scale + (b * S + s) * C;
        for (int64_t c = 0; c < C; ++c) dr[c] = dr[c] * sr[c];
      }
    }
  });
  // d beta_c = sum_{b,s} G;  d gamma_c = sum_{b,s} G*x*n_c = sum_b n_bc P_bc.
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
  template void global_response_norm_samples_reference(const T*, const T*, const T*, double,   \
                                                       T*, double*, int64_t, int64_t, int64_t); \
  template void global_response_norm_backward_samples_reference(                               \
      const T*, const T*, const T*, const double*, T*, T*, T*, int64_t, int64_t, int64_t);
VG_GRN(float)
VG_GRN(double)
#undef VG_GRN

}  // namespace vg::kernels
