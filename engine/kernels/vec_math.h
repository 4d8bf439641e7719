// exp and erf for float that the compiler can vectorise: branch-free polynomials (std::expf
// and std::erff are scalar library calls, which made GELU a quarter of a ViT training step).
// Both are within a few float ulps: exp ~1 ulp (Cephes' expf polynomial after reduction by
// ln 2), erf < 4e-7 absolute (a rational x P(x^2) / Q(x^2) on [-4, 4], erf = +-1 outside).
// exp_of picks the polynomial for float and libm for double.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

namespace vg::vec {

// exp for x already in [-87.3, 88.3], where the float result neither overflows nor leaves 2^n
// out of range: for a caller that knows its range (GELU's phi), where the clamp below would
// only cost instructions.
inline float exp_in_range(float x) {
  const float n = std::floor(x * 1.44269504f + 0.5f);  // x = n ln2 + r, |r| <= ln2 / 2
  float r = x - n * 0.693359375f;                      // ln2 in two parts: exact n * hi
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const float scale = std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);  // 2^n
  return p * scale;
}

inline float exp(float x) {
  return exp_in_range(std::min(std::max(x, -87.3f), 88.3f));
}

inline float erf(float x) {
  x = std::min(std::max(x, -4.0f), 4.0f);
  const float x2 = x * x;
  float p = -2.72614225801306e-10f;
  p = p * x2 + 2.77068142495902e-08f;
  p = p * x2 + -2.10102402082508e-06f;
  p = p * x2 + -5.69250639462346e-05f;
  p = p * x2 + -7.34990630326855e-04f;
  p = p * x2 + -2.95459980854025e-03f;
  p = p * x2 + -1.60960333262415e-02f;
  float q = -1.45660718464996e-05f;
  q = q * x2 + -2.13374055278905e-04f;
  q = q * x2 + -1.68282697438203e-03f;
  q = q * x2 + -7.37332916720468e-03f;
  q = q * x2 + -1.42647390514189e-02f;
  return x * p / q;
}

// exp for softmax rows: the polynomial above for float (libm's scalar call was most of the
// attention forward), libm's for double, whose gradchecks want its last bits.
inline float exp_of(float x) {
  return exp(x);
}
inline double exp_of(double x) {
  return std::exp(x);
}

}  // namespace vg::vec
