#include "engine/kernels/elementwise_apply.h"

#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "engine/core/rng.h"

using namespace vg;

namespace {

std::vector<double> random_values(int64_t n, Rng& rng) {
  std::vector<double> v(n);
  for (double& x : v) x = rng.normal();
  return v;
}

}  // namespace

// Each pair broadcasts differently: a row, a column, a middle axis, leading axes, a scalar.
TEST_CASE("zip_broadcast gives the bits of the plain multi-index loop for each broadcast form") {
  const Shape pairs[][3] = {{{300, 70}, {70}, {300, 70}},
                            {{300, 70}, {300, 1}, {300, 70}},
                            {{4, 1, 50}, {4, 30, 50}, {4, 30, 50}},
                            {{2, 3, 1, 5}, {7, 1}, {2, 3, 7, 5}},
                            {{}, {40, 600}, {40, 600}}};
  Rng rng(21);
  auto f = [](double x, double y) { return x * y - x / (1 + y * y); };
  for (const auto& [sa, sb, so] : pairs) {
    CAPTURE(shape_str(sa));
    CAPTURE(shape_str(sb));
    const std::vector<double> a = random_values(shape_numel(sa), rng),
                              b = random_values(shape_numel(sb), rng);
    std::vector<double> out(shape_numel(so)), out_ref(shape_numel(so));
    kernels::zip_broadcast(kernels::plan_broadcast(sa, sb, so), a.data(), b.data(), out.data(), f);
    kernels::zip_broadcast_reference(a.data(), sa, b.data(), sb, out_ref.data(), so, f);
    CHECK(out == out_ref);
    std::vector<double> copied(shape_numel(so)), copied_ref(shape_numel(so));
    kernels::broadcast_copy(kernels::plan_broadcast(sa, so, so), a.data(), copied.data());
    kernels::zip_broadcast_reference(a.data(), sa, b.data(), sb, copied_ref.data(), so,
                                     [](double x, double) { return x; });
    CHECK(copied == copied_ref);
  }
}

TEST_CASE("map_elements, zip_elements and times_derivative apply their function to each element") {
  const int64_t n = 70000;  // several threads' shares
  Rng rng(22);
  const std::vector<double> x = random_values(n, rng), g = random_values(n, rng);
  std::vector<double> y(n), gx(n), sum(n);
  kernels::map_elements(x.data(), y.data(), n, [](double v) { return std::tanh(v); });
  kernels::times_derivative(x.data(), y.data(), g.data(), gx.data(), n,
                            [](double, double t) { return 1 - t * t; });
  kernels::zip_elements(x.data(), g.data(), sum.data(), n,
                        [](double u, double v) { return u + v; });
  for (int64_t i = 0; i < n; ++i) {
    INFO("element ", i);
    REQUIRE(y[i] == std::tanh(x[i]));
    REQUIRE(gx[i] == g[i] * (1 - y[i] * y[i]));
    REQUIRE(sum[i] == x[i] + g[i]);
  }
}
