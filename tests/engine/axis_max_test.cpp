#include "engine/kernels/axis_max.h"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "engine/core/rng.h"

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

// Values rounded to a few levels, so that columns have ties; a few NaNs.
TEST_CASE("max_middle_axis gives the values and places of the serial loop") {
  const int64_t outer = 7, reduced = 13, inner = 300;
  Rng rng(8);
  std::vector<float> x(outer * reduced * inner);
  for (float& v : x) v = float(std::round(rng.normal() * 2));
  for (size_t i = 17; i < x.size(); i += 1001) x[i] = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> y(outer * inner), y_ref(outer * inner);
  std::vector<int64_t> where(outer * inner), where_ref(outer * inner);
  kernels::max_middle_axis(x.data(), y.data(), where.data(), outer, reduced, inner);
  kernels::max_middle_axis_reference(x.data(), y_ref.data(), where_ref.data(), outer, reduced,
                                     inner);
  CHECK(where == where_ref);
  for (size_t k = 0; k < y.size(); ++k) {
    INFO("column ", k, ": kernel ", y[k], ", reference ", y_ref[k]);
    REQUIRE((y[k] == y_ref[k] || (std::isnan(y[k]) && std::isnan(y_ref[k]))));
  }
}
