// bfloat16: the upper half of a float's bits (sign, the same 8 exponent bits, 7 of the 23
// fraction bits). A float becomes one by rounding to nearest, ties to even, on its bit
// pattern: add 0x7FFF plus the lowest kept bit, then drop the low 16 bits. The bit patterns of
// floats of one sign are ordered like their values, so this one integer add rounds normal
// numbers, subnormals (to the nearest bf16 subnormal, nothing flushed) and the overflow past
// the largest bf16 (3.39e38) to infinity, as IEEE rounding does; infinities stay infinities.
// Only NaN needs a case of its own: the add could carry its payload into the exponent and
// make it infinity, so a NaN keeps its upper bits with the quiet bit set.
#pragma once

#include <bit>
#include <cstdint>

namespace vg {

// A bfloat16 value as its 16 bits.
using bf16 = uint16_t;

// The bf16 nearest to x (ties to even); NaN stays a (quiet) NaN of the same sign.
inline bf16 to_bf16(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return bf16((bits >> 16) | 0x0040u);
  return bf16((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

// The float a bf16 stands for (exact: every bf16 is a float).
inline float from_bf16(bf16 h) {
  return std::bit_cast<float>(uint32_t(h) << 16);
}

// Two bf16 in one 32-bit word, `first` in the low half: the pair of consecutive terms of a
// dot product that one lane of AVX512-BF16's vdpbf16ps (and of an AMX tile row) multiplies.
inline uint32_t bf16_pair(float first, float second) {
  return uint32_t(to_bf16(first)) | uint32_t(to_bf16(second)) << 16;
}

}  // namespace vg
