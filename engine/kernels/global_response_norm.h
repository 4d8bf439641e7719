// Global Response Normalization (ConvNeXt V2) of x seen as (B, S, C), S the product of the
// spatial axes, one sample at a time: a sample's S x C values (a few hundred KB at most in a
// ViT) are read from memory once for the sums and again from L2 for the output.
// Per sample b and channel c:
//   g = sqrt(sum_s x^2),  mu = mean_c g,  n = g / (mu + eps),  y = x + (beta + gamma * (x * n)).
#pragma once

#include <cstdint>

namespace vg::kernels {

// stats receives per (b, c) the norm g, then per (b, c) n, then per b the divisor mu + eps:
// B * (2C + 1) doubles.
template <class T>
void global_response_norm_samples(const T* x, const T* gamma, const T* beta, double eps, T* y,
                                  double* stats, int64_t B, int64_t S, int64_t C);

// GRN of gelu(h) (gelu_slope.h; erf form unless tanh_form), one sample at a time: the
// sample's GELU values are made into `a` (kept for backward) or, where `a` is null, into a
// per-thread block that stays in cache, and GELU's slope into `slope` unless it is null.
// The bits of gelu_with_slope (or the gelu op) followed by global_response_norm_samples.
template <class T>
void gelu_grn_samples(const T* h, bool tanh_form, const T* gamma, const T* beta, double eps,
                      T* a, T* slope, T* y, double* stats, int64_t B, int64_t S, int64_t C);

// gelu_grn_samples for float with y rounded to bf16 as it is made, row r's pairs (bf16_pair of
// its values 2p and 2p + 1, the second zero past an odd C) at y_words[r * ((C + 1) / 2) ...]:
// a weight gradient's kept operand (bf16_gemm.h Bf16Rows), which rounds them the same way.
void gelu_grn_samples_bf16(const float* h, bool tanh_form, const float* gamma, const float* beta,
                           double eps, float* a, float* slope, uint32_t* y_words, double* stats,
                           int64_t B, int64_t S, int64_t C);

// From dy (G) and the forward's stats: dx (may be null), dgamma_c = sum_b n_bc sum_s G x,
// dbeta_c = sum_{b,s} G (either may be null). dx_sc = G_sc (1 + gamma_c n_c) + x_sc * dL/dg_c
// / g_c with dL/dg_k = (a_k - mean_c(a_c n_c)) / (mu + eps), a_c = gamma_c sum_s G x, and the
// x/g factor 0 where g_c == 0 (PyTorch's masked norm backward).
// Where dx_scale is given, dx is then multiplied by it element by element in the same pass:
// the chain rule through an elementwise map before GRN (gelu_grn_samples' slope), with the
// bits of multiply_by_slope after this kernel.
template <class T>
void global_response_norm_backward_samples(const T* dy, const T* x, const T* gamma,
                                           const double* stats, T* dx, T* dgamma, T* dbeta,
                                           int64_t B, int64_t S, int64_t C,
                                           const T* dx_scale = nullptr);

// The backward of gelu_grn_samples from h alone, one sample at a time: the sample's GELU
// values and slope, GRN's statistics and output are made again in per-thread blocks that stay
// in cache (the bits of gelu_grn_samples), the output goes to `a`, and dy (GRN's output
// gradient) becomes dh in its own memory, GELU's slope applied (the bits of
// global_response_norm_backward_samples with dx_scale), unless need_dh is false; dgamma and
// dbeta as there (either may be null). Memory sees h and dy read and a and dh written, once each.
template <class T>
void gelu_grn_backward_samples(const T* h, bool tanh_form, const T* gamma, const T* beta,
                               double eps, T* a, T* dy, bool need_dh, T* dgamma, T* dbeta,
                               int64_t B, int64_t S, int64_t C);

// The same with the output rounded to bf16 as it is made, as a weight gradient's kept operand
// (bf16_gemm.h Bf16Rows): by rows (the words of gelu_grn_samples_bf16) or, with row_pairs, by
// pairs of rows, which needs an even S (a pair never spans two samples).
void gelu_grn_backward_samples_bf16(const float* h, bool tanh_form, const float* gamma,
                                    const float* beta, double eps, uint32_t* a_words,
                                    bool row_pairs, float* dy, bool need_dh, float* dgamma,
                                    float* dbeta, int64_t B, int64_t S, int64_t C);

// The forward as plain loops (channel by channel): within 1e-12 of the kernel in float64.
template <class T>
void global_response_norm_samples_reference(const T* x, const T* gamma, const T* beta,
                                            double eps, T* y, double* stats, int64_t B,
                                            int64_t S, int64_t C);

// The backward as plain loops, channel by channel, straight from the formula above: within
// 1e-12 of the kernel in float64. dx, dgamma, dbeta may each be null.
template <class T>
void global_response_norm_backward_samples_reference(const T* dy, const T* x, const T* gamma,
                                                     const double* stats, T* dx, T* dgamma,
                                                     T* dbeta, int64_t B, int64_t S, int64_t C);

}  // namespace vg::kernels
