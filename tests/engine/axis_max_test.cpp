#include "engine/kernels/axis_max.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

using namespace vg;

TEST_CASE("max_middle_axis takes the first maximum of each column and remembers where") {
  // (outer 1, reduced 3, inner 2): column 0 has a tie, column 1 its maximum last.
  const std::vector<float> x{5, 1, 2, 3, 5, 4};
  std::vector<float> y(2);
  std::vector<int64_t> where(2);
  kernels::max_middle_axis(x.data(), y.data(), where.data(), 1, 3, 2);
  CHECK(y == std::vector<float>{5, 4});
  CHECK(where == std::vector<int64_t>{0, 5});
}

TEST_CASE("max_middle_axis lets a NaN win, so the maximum shows it") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> x{1, nan, 3};
  double y = 0;
  int64_t where = -1;
  kernels::max_middle_axis(x.data(), &y, &where, 1, 3, 1);
  CHECK(std::isnan(y));
  CHECK(where == 1);
}
