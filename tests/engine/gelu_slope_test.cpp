#include "engine/kernels/gelu_slope.h"

#include <doctest/doctest.h>

#include <vector>

#include "engine/core/rng.h"
#include "engine/kernels/gelu_math.h"

using namespace vg;

// The reference is gelu_math's per-element value and derivative, which the gelu op uses.
TEST_CASE("gelu_with_slope has the bits of gelu_math's value and derivative, both forms") {
  const int64_t n = 40000;  // more than one thread's share
  Rng rng(1);
  std::vector<float> h(n);
  for (float& v : h) v = float(3 * rng.normal());
  for (bool tanh_form : {false, true}) {
    INFO("tanh form: ", tanh_form);
    std::vector<float> a(n), slope(n);
    kernels::gelu_with_slope(h.data(), a.data(), slope.data(), n, tanh_form);
    int64_t value_mismatches = 0, slope_mismatches = 0;
    for (int64_t i = 0; i < n; ++i) {
      const float va = tanh_form ? gelu_math::tanh_value(h[i]) : gelu_math::erf_value(h[i]);
      const float vs =
          tanh_form ? gelu_math::tanh_derivative(h[i]) : gelu_math::erf_derivative(h[i]);
      value_mismatches += a[i] != va;
      slope_mismatches += slope[i] != vs;
    }
    CHECK(value_mismatches == 0);
    CHECK(slope_mismatches == 0);
  }
}

TEST_CASE("multiply_by_slope multiplies a gradient by the slope in place") {
  std::vector<double> d{1, -2, 3}, slope{0.5, 0.25, 0};
  kernels::multiply_by_slope(d.data(), slope.data(), 3);
  CHECK(d == std::vector<double>{0.5, -0.5, 0});
}

TEST_CASE("gelu_with_grad has the bits of gelu_with_slope then multiply_by_slope, both forms") {
  const int64_t n = 40000;  // more than one thread's share
  Rng rng(2);
  std::vector<float> h(n), d(n);
  for (float& v : h) v = float(3 * rng.normal());
  for (float& v : d) v = float(rng.normal());
  for (bool tanh_form : {false, true}) {
    INFO("tanh form: ", tanh_form);
    std::vector<float> a_apart(n), slope(n), d_apart = d, a_fused(n), d_fused = d;
    kernels::gelu_with_slope(h.data(), a_apart.data(), slope.data(), n, tanh_form);
    kernels::multiply_by_slope(d_apart.data(), slope.data(), n);
    kernels::gelu_with_grad(h.data(), a_fused.data(), d_fused.data(), n, tanh_form);
    CHECK(a_fused == a_apart);
    CHECK(d_fused == d_apart);
  }
}

TEST_CASE("gelu_block has the bits of gelu_with_slope, with and without the slope, both forms") {
  const int64_t n = 3000;
  Rng rng(5);
  std::vector<float> h(n);
  for (float& v : h) v = float(3 * rng.normal());
  for (bool tanh_form : {false, true}) {
    INFO("tanh form: ", tanh_form);
    std::vector<float> a(n), slope(n), a_block(n), slope_block(n), a_alone(n);
    kernels::gelu_with_slope(h.data(), a.data(), slope.data(), n, tanh_form);
    kernels::gelu_block(h.data(), a_block.data(), slope_block.data(), n, tanh_form);
    kernels::gelu_block<float>(h.data(), a_alone.data(), nullptr, n, tanh_form);
    CHECK(a_block == a);
    CHECK(slope_block == slope);
    CHECK(a_alone == a);
  }
}
