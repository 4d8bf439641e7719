#include "engine/kernels/axis_sums.h"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "engine/core/rng.h"

using namespace vg;

namespace {

std::vector<float> normal_values(int64_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> x(n);
  for (float& v : x) v = float(rng.normal());
  return x;
}

}  // namespace

TEST_CASE("sum_middle_axis has the bits of the plain loop up to 1024 summed rows") {
  // Rows (inner 1), columns narrower and wider than a block of 256, one and several outers.
  for (auto [outer, reduced, inner] : {std::array<int64_t, 3>{7, 300, 1}, {1, 1024, 64},
                                       {3, 100, 300}, {2, 1, 70}, {1, 513, 257}}) {
    const std::vector<float> x = normal_values(outer * reduced * inner, 3);
    std::vector<float> fast(outer * inner), plain(outer * inner);
    kernels::sum_middle_axis(x.data(), fast.data(), outer, reduced, inner);
    kernels::sum_middle_axis_reference(x.data(), plain.data(), outer, reduced, inner);
    INFO("(outer, reduced, inner) = (", outer, ", ", reduced, ", ", inner, ")");
    CHECK(fast == plain);
  }
}

TEST_CASE("sum_middle_axis over more than 1024 rows adds its chunks within 1e-12 of the plain loop") {
  const int64_t reduced = 3000, inner = 5;
  std::vector<double> x(reduced * inner);
  Rng rng(8);
  for (double& v : x) v = rng.normal();
  std::vector<double> fast(inner), plain(inner);
  kernels::sum_middle_axis(x.data(), fast.data(), 1, reduced, inner);
  kernels::sum_middle_axis_reference(x.data(), plain.data(), 1, reduced, inner);
  for (int64_t i = 0; i < inner; ++i) {
    INFO("column ", i, ": kernel ", fast[i], ", plain loop ", plain[i]);
    CHECK(std::abs(fast[i] - plain[i]) < 1e-12);
  }
}

TEST_CASE("sum_axes over axes that are not adjacent sums each kept element in order") {
  // shape (2, 3, 4), axes 0 and 2 summed: out[j] = sum_{i,k} x[i, j, k], i then k.
  const std::vector<int64_t> shape{2, 3, 4};
  std::vector<double> x(24);
  for (int i = 0; i < 24; ++i) x[i] = 0.5 * i + 0.25;
  std::vector<double> out(3);
  kernels::sum_axes(x.data(), shape, {true, false, true}, out.data());
  for (int j = 0; j < 3; ++j) {
    double plain = 0;
    for (int i = 0; i < 2; ++i)
      for (int k = 0; k < 4; ++k) plain += x[(i * 3 + j) * 4 + k];
    CHECK(out[j] == plain);
  }
}

TEST_CASE("sum_axes skips size-1 axes when it looks for adjacent reduced axes") {
  int64_t outer, count, inner;
  CHECK(kernels::as_middle_axis({4, 1, 5, 6}, {false, true, true, false}, outer, count, inner));
  CHECK(outer == 4);
  CHECK(count == 5);
  CHECK(inner == 6);
  CHECK_FALSE(kernels::as_middle_axis({4, 5, 6}, {true, false, true}, outer, count, inner));
}
