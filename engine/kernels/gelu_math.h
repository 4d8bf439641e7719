// GELU's value and derivative per element, for the gelu op (ops/elementwise.cpp) and the
// fused gelu_linear (ops/fused_linear_maps.cpp). One definition for both, so the fused op
// reproduces the op-by-op result bit for bit.
//   erf form:  gelu(x) = x Phi(x)                      gelu'(x) = Phi(x) + x phi(x)
//   tanh form: gelu(x) = 0.5 x (1 + tanh(u)),  u = sqrt(2/pi) (x + 0.044715 x^3)
//              gelu'(x) = 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2)
#pragma once

#include <algorithm>
#include <cmath>

#include "engine/kernels/vec_math.h"

namespace vg::gelu_math {

template <class T>
T phi(T x) {
  return T(0.3989422804014327) * std::exp(T(-0.5) * x * x);
}
template <class T>
T Phi(T x) {
  return T(0.5) * (T(1) + std::erf(x * T(0.7071067811865476)));
}
// float: the vectorisable polynomials (engine/kernels/vec_math.h); float64 keeps libm's.
inline float phi(float x) {
  // Beyond |x| = 13 phi underflows and x * phi(x) is 0, so x^2 is clamped at 169, and exp's
  // argument lies in [-84.5, 0], where exp needs no clamp of its own. Every float but NaN (NaN
  // either way) gets the bits that clamping x to [-13, 13] and then exp's argument gave (all
  // 2^32 compared), in fewer instructions: GCC split the vectorised loop on the ranges of those
  // two clamps, one after the other, with masks and blends (GELU's gradient pass over 6400 x 256
  // on two threads took 0.54 ms, now 0.42).
  const float x2 = std::min(x * x, 169.0f);
  return 0.3989422804014327f * vec::exp_in_range(-0.5f * x2);
}
inline float Phi(float x) {
  return 0.5f * (1.0f + vec::erf(x * 0.7071067811865476f));
}
constexpr double kSqrt2OverPi = 0.7978845608028654;

template <class T>
T erf_value(T x) {
  return x * Phi(x);
}
template <class T>
T erf_derivative(T x) {
  return Phi(x) + x * phi(x);
}

template <class T>
T tanh_value(T x) {
  return T(0.5) * x * (1 + std::tanh(T(kSqrt2OverPi) * (x + T(0.044715) * x * x * x)));
}
template <class T>
T tanh_derivative(T x) {
  const T t = std::tanh(T(kSqrt2OverPi) * (x + T(0.044715) * x * x * x));
  return T(0.5) * (1 + t) +
         T(0.5) * x * (1 - t * t) * T(kSqrt2OverPi) * (1 + T(3 * 0.044715) * x * x);
}

// Forward FLOPs per element, as the ops record them.
constexpr double kErfFlops = 8, kTanhFlops = 10;

}  // namespace vg::gelu_math
