#include "engine/kernels/permute_copy.h"

#include <doctest/doctest.h>

#include <vector>

using namespace vg;

TEST_CASE("permute_copy matches an index-by-index reference for a rank-3 reorder") {
  const std::vector<int64_t> shape{2, 3, 4}, order{2, 0, 1};  // out shape (4, 2, 3)
  std::vector<float> x(24);
  for (int i = 0; i < 24; ++i) x[i] = float(i);
  std::vector<float> out(24);
  kernels::permute_copy(x.data(), shape, order, out.data());
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) {
        INFO("out[", k, ", ", i, ", ", j, "]");
        CHECK(out[(k * 2 + i) * 3 + j] == x[(i * 3 + j) * 4 + k]);
      }
}

TEST_CASE("permute_copy of a scalar copies its one element") {
  const double x = 2.5;
  double y = 0;
  kernels::permute_copy(&x, {}, {}, &y);
  CHECK(y == 2.5);
}
