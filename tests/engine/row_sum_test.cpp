#include "engine/kernels/row_sum.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
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
