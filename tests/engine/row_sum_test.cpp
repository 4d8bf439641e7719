#include "engine/kernels/row_sum.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "engine/core/rng.h"

using namespace vg;

// Lengths around the lane count: below it, equal, and with every tail length after it.
TEST_CASE("row_sum and row_max agree with a plain loop for every length from 1 to 40") {
  Rng rng(5);
  for (int64_t n = 1; n <= 40; ++n) {
    std::vector<float> x(n);
    for (float& v : x) v = float(rng.normal());
    long double exact = 0;
    for (float v : x) exact += v;
    const double s = vec::row_sum(n, [&](int64_t c) { return x[c]; });
    INFO("n = ", n, ", row_sum = ", s, ", plain loop in long double = ", double(exact));
    CHECK(std::abs(s - double(exact)) < 1e-12);
    CHECK(vec::row_max(x.data(), n) == *std::max_element(x.begin(), x.end()));
  }
}

TEST_CASE("row_sum of integers is exact whatever the lane of each term") {
  for (int64_t n : {1, 7, 8, 9, 64, 67, 192}) {
    INFO("n = ", n);
    CHECK(vec::row_sum(n, [](int64_t c) { return double(c + 1); }) == double(n * (n + 1) / 2));
  }
}

TEST_CASE("row_max finds the largest element in the tail and in the first lane") {
  std::vector<double> x(19, -1.0);
  x[18] = 3.0;
  CHECK(vec::row_max(x.data(), 19) == 3.0);
  x[18] = -1.0;
  x[0] = 2.0;
  CHECK(vec::row_max(x.data(), 19) == 2.0);
}

// The plain definition: lane c % 8 keeps std::max(lane, x[c]), the lanes combined in order.
template <class T>
T lane_max_reference(const T* x, int64_t n) {
  T acc[vec::kSumLanes];
  std::fill(acc, acc + vec::kSumLanes, x[0]);
  for (int64_t c = 0; c < n; ++c) acc[c % vec::kSumLanes] = std::max(acc[c % vec::kSumLanes], x[c]);
  T m = acc[0];
  for (int l = 1; l < vec::kSumLanes; ++l) m = std::max(m, acc[l]);
  return m;
}

// Ties between +0 and -0 and compares with NaN are where max functions differ (which operand
// a tie or an unordered compare returns); row_max's vector lanes return what std::max does.
template <class T, class Bits>
void check_row_max_bits() {
  const T values[] = {T(0), -T(0), std::numeric_limits<T>::quiet_NaN(), T(1), T(-1)};
  Rng rng(9);
  for (int64_t n = 1; n <= 40; ++n)
    for (int trial = 0; trial < 50; ++trial) {
      std::vector<T> x(n);
      for (T& v : x) v = values[rng.below(5)];
      const Bits got = std::bit_cast<Bits>(vec::row_max(x.data(), n));
      const Bits want = std::bit_cast<Bits>(lane_max_reference(x.data(), n));
      INFO("n = ", n, ", trial ", trial);
      CHECK(got == want);
    }
}

TEST_CASE("row_max returns std::max's bits for signed zeros and NaNs in every lane") {
  check_row_max_bits<float, uint32_t>();
  check_row_max_bits<double, uint64_t>();
}
