#include <doctest/doctest.h>

#include <cmath>

#include "engine/core/parallel.h"
#include "tests/engine/gradcheck_helpers.h"

using namespace vg;
using vg::testing::expect_gradients;
using vg::testing::variable;

TEST_CASE("binary ops compute values with broadcasting") {
  Tensor a = from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor row = from_vector(std::vector<float>{10, 20, 30}, {3});
  Tensor col = from_vector(std::vector<float>{2, 4}, {2, 1});
  CHECK((a + row).to_vector() == std::vector<double>{11, 22, 33, 14, 25, 36});
  CHECK((a - row).to_vector() == std::vector<double>{-9, -18, -27, -6, -15, -24});
  CHECK((a * col).to_vector() == std::vector<double>{2, 4, 6, 16, 20, 24});
  CHECK((a / col).to_vector() == std::vector<double>{0.5, 1, 1.5, 1, 1.25, 1.5});
  CHECK((row + col).shape() == Shape{2, 3});
  CHECK((2.0 - a).at({0, 0}) == 1.0);
  CHECK((6.0 / a).at({0, 2}) == 2.0);
}

TEST_CASE("gelu, tanh, sigmoid and relu match known numbers") {
  Tensor x = from_vector(std::vector<double>{-1, 0, 1}, {3});
  CHECK(gelu(x).at({2}) == doctest::Approx(0.8413447461).epsilon(1e-10));
  CHECK(gelu(x).at({0}) == doctest::Approx(-0.1586552539).epsilon(1e-10));
  CHECK(gelu(x, GeluApprox::tanh).at({2}) == doctest::Approx(0.8411919906).epsilon(1e-10));
  CHECK(sigmoid(x).at({1}) == 0.5);
  CHECK(tanh(x).at({2}) == doctest::Approx(std::tanh(1.0)));
  CHECK(relu(x).to_vector() == std::vector<double>{0, 0, 1});
  // gelu'(0) = 0.5 and gelu'(1) = 1.0833154706
  Tensor p = from_vector(std::vector<double>{0, 1}, {2}).set_requires_grad();
  sum(gelu(p)).backward();
  CHECK(p.grad().at({0}) == doctest::Approx(0.5).epsilon(1e-12));
  CHECK(p.grad().at({1}) == doctest::Approx(1.0833154706).epsilon(1e-10));
}

TEST_CASE("float32 gelu (vectorised erf and exp) stays within float rounding of float64") {
  std::vector<double> xs;
  for (int i = -3000; i <= 3000; ++i) xs.push_back(i / 250.0);  // [-12, 12]
  const int64_t n = int64_t(xs.size());
  Tensor x64 = from_vector(xs, {n}).set_requires_grad();
  Tensor x32 = from_vector(xs, {n}, DType::f32).set_requires_grad();
  sum(gelu(x64)).backward();
  sum(gelu(x32)).backward();
  const std::vector<double> y64 = gelu(x64.detach()).to_vector(),
                            y32 = gelu(x32.detach()).to_vector();
  const std::vector<double> g64 = x64.grad().to_vector(), g32 = x32.grad().to_vector();
  double worst_value = 0, worst_grad = 0;
  for (int64_t i = 0; i < n; ++i) {
    // Relative to |x| (gelu ~ x for large x), absolute near 0: a few float ulps.
    worst_value = std::max(worst_value, std::abs(y32[i] - y64[i]) / std::max(1.0, std::abs(xs[i])));
    worst_grad = std::max(worst_grad, std::abs(g32[i] - g64[i]));
  }
  CHECK(worst_value < 1e-6);
  CHECK(worst_grad < 1e-6);
  CHECK(gelu(from_vector(std::vector<double>{-30, 30}, {2}, DType::f32)).to_vector() ==
        std::vector<double>{0, 30});
}

TEST_CASE("binary ops pass gradcheck, including operands that broadcast along each axis") {
  const Shape full_shape{2, 3, 4};
  // Broadcast along each single axis ({1,3,4}, {2,1,4}, {2,3,1}), along pairs, by missing
  // leading axes, and as a scalar.
  const std::vector<Shape> partners{{2, 3, 4}, {4},       {3, 1},    {2, 1, 1}, {1, 3, 4},
                                    {2, 1, 4}, {2, 3, 1}, {1, 1, 4}, {1, 3, 1}, {}};
  for (const Shape& s : partners) {
    Tensor a = variable(full_shape, 1), b = variable(s, 2, 3.0);  // b away from 0 for div
    INFO("partner shape ", shape_str(s));
    expect_gradients("add", [](auto& in) { return add(in[0], in[1]); }, {a, b});
    expect_gradients("sub", [](auto& in) { return sub(in[0], in[1]); }, {a, b});
    expect_gradients("mul", [](auto& in) { return mul(in[0], in[1]); }, {a, b});
    expect_gradients("div", [](auto& in) { return div(in[0], in[1]); }, {a, b});
    expect_gradients("div, broadcast numerator", [](auto& in) { return div(in[1], in[0]); },
                     {variable(full_shape, 3, 3.0), b});
  }
}

TEST_CASE("binary ops pass gradcheck when both operands broadcast") {
  // (2,1,4) op (1,3,1) -> (2,3,4): each operand's gradient is summed over its own axes.
  const std::vector<std::pair<Shape, Shape>> pairs{
      {{2, 1, 4}, {1, 3, 1}}, {{3, 1}, {1, 4}}, {{1, 3, 1}, {2, 1, 1, 4}}};
  for (const auto& [sa, sb] : pairs) {
    INFO("shapes ", shape_str(sa), " and ", shape_str(sb));
    Tensor a = variable(sa, 6, 3.0), b = variable(sb, 7, 3.0);
    expect_gradients("add", [](auto& in) { return add(in[0], in[1]); }, {a, b});
    expect_gradients("sub", [](auto& in) { return sub(in[0], in[1]); }, {a, b});
    expect_gradients("mul", [](auto& in) { return mul(in[0], in[1]); }, {a, b});
    expect_gradients("div", [](auto& in) { return div(in[0], in[1]); }, {a, b});
  }
}

TEST_CASE("unary and scalar ops pass gradcheck") {
  Tensor x = variable({3, 5}, 4);
  Tensor pos = variable({3, 5}, 5, 4.0);  // > 0 for log, sqrt, pow
  expect_gradients("neg", [](auto& in) { return neg(in[0]); }, {x});
  expect_gradients("exp", [](auto& in) { return exp(in[0]); }, {x});
  expect_gradients("log", [](auto& in) { return log(in[0]); }, {pos});
  expect_gradients("sqrt", [](auto& in) { return sqrt(in[0]); }, {pos});
  expect_gradients("pow", [](auto& in) { return pow(in[0], 2.5); }, {pos});
  expect_gradients("pow negative", [](auto& in) { return pow(in[0], -1.5); }, {pos});
  expect_gradients("abs", [](auto& in) { return abs(in[0]); }, {x});
  expect_gradients("tanh", [](auto& in) { return tanh(in[0]); }, {x});
  expect_gradients("sigmoid", [](auto& in) { return sigmoid(in[0]); }, {x});
  expect_gradients("relu", [](auto& in) { return relu(in[0]); }, {x});
  expect_gradients("gelu", [](auto& in) { return gelu(in[0]); }, {x});
  expect_gradients("gelu tanh", [](auto& in) { return gelu(in[0], GeluApprox::tanh); }, {x});
  expect_gradients("scalar ops", [](auto& in) { return (2.0 - in[0] * 3.0 + 1.0) / 4.0; }, {x});
  expect_gradients("tensor minus scalar", [](auto& in) { return sub(in[0], 1.5); }, {x});
  expect_gradients("scalar divided by tensor", [](auto& in) { return 2.0 / in[0]; }, {pos});
  expect_gradients("clone", [](auto& in) { return in[0].clone(); }, {x});
  expect_gradients("reshape", [](auto& in) { return in[0].reshape({5, 3}) * 2.0; }, {x});
}

TEST_CASE("to() passes the gradient back in the source dtype") {
  Tensor x = from_vector(std::vector<double>{1.5, -2}, {2}).set_requires_grad();
  sum(mul(x.to(DType::f32), 2.0)).backward();
  CHECK(x.grad().dtype() == DType::f64);
  CHECK(x.grad().to_vector() == std::vector<double>{2, 2});
}

TEST_CASE("elementwise kernels give identical bits with 1 and 2 threads") {
  Tensor a = variable({257, 129}, 7).detach(), b = variable({129}, 8).detach();
  set_num_threads(1);
  const std::vector<double> one = gelu(mul(a, b)).to_vector();
  set_num_threads(2);
  CHECK(gelu(mul(a, b)).to_vector() == one);
}
