// bfloat16 rounding (engine/kernels/bf16.h): round to nearest, ties to even, at every edge.
#include "engine/kernels/bf16.h"

#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <initializer_list>
#include <limits>

using namespace vg;

namespace {

bf16 round_bits(uint32_t float_bits) {
  return to_bf16(std::bit_cast<float>(float_bits));
}

}  // namespace

TEST_CASE("to_bf16 keeps values that are already bf16") {
  for (float x : {0.0f, 1.0f, -2.5f, 0.15625f, 3.0e38f / 1.0e10f})
    CHECK(from_bf16(to_bf16(from_bf16(to_bf16(x)))) == from_bf16(to_bf16(x)));
  CHECK(to_bf16(1.0f) == 0x3F80);
  CHECK(to_bf16(-0.0f) == 0x8000);
  CHECK(from_bf16(0xC020) == -2.5f);
}

TEST_CASE("to_bf16 rounds to nearest, ties to the even neighbour") {
  // 1 + 2^-8 lies halfway between 1 (0x3F80, even) and 1 + 2^-7 (0x3F81): down to the even one.
  CHECK(round_bits(0x3F808000) == 0x3F80);
  // 1 + 3 * 2^-8 lies halfway between 0x3F81 (odd) and 0x3F82 (even): up.
  CHECK(round_bits(0x3F818000) == 0x3F82);
  CHECK(round_bits(0x3F807FFF) == 0x3F80);  // just below half: down
  CHECK(round_bits(0x3F808001) == 0x3F81);  // just above half: up
  CHECK(round_bits(0xBF808001) == 0xBF81);  // the same for negative numbers (away from zero)
  CHECK(round_bits(0xBF808000) == 0xBF80);
  CHECK(round_bits(0x3FFFFFFF) == 0x4000);  // the carry runs into the exponent: 2.0
}

TEST_CASE("to_bf16 rounds subnormals to the nearest bf16 subnormal, without flushing") {
  CHECK(round_bits(0x00000001) == 0x0000);  // the smallest float subnormal rounds to zero
  CHECK(round_bits(0x00008000) == 0x0000);  // half of the smallest bf16 subnormal: tie, even
  CHECK(round_bits(0x00008001) == 0x0001);
  CHECK(round_bits(0x00018000) == 0x0002);  // tie between 0x0001 and 0x0002: even
  CHECK(round_bits(0x00010000) == 0x0001);  // a bf16 subnormal stays
  CHECK(round_bits(0x807FFFFF) ==
        0x8080);  // the largest subnormal rounds up to the smallest normal
  CHECK(from_bf16(0x0001) == std::ldexp(1.0f, -133));
}

TEST_CASE("to_bf16 keeps infinities, rounds past the largest bf16 to infinity, keeps NaN a NaN") {
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(to_bf16(inf) == 0x7F80);
  CHECK(to_bf16(-inf) == 0xFF80);
  CHECK(to_bf16(std::numeric_limits<float>::max()) == 0x7F80);
  CHECK(round_bits(0x7F7F7FFF) == 0x7F7F);  // below the halfway point: the largest bf16
  CHECK(round_bits(0x7F7F8000) == 0x7F80);  // the tie goes to even, which is infinity
  // NaNs whose payload sits in the low 16 bits would round to infinity by the add; they stay
  // NaN, quiet, with their sign.
  CHECK(round_bits(0x7F800001) == 0x7FC0);
  CHECK(round_bits(0xFF800001) == 0xFFC0);
  CHECK(round_bits(0x7FFFFFFF) == 0x7FFF);
  CHECK(std::isnan(from_bf16(to_bf16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST_CASE("bf16_pair puts the first term in the low half") {
  CHECK(bf16_pair(1.0f, -2.5f) == (0xC020u << 16 | 0x3F80u));
}
