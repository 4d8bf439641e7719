#include <doctest/doctest.h>

#include "engine/core/parallel.h"
#include "tests/engine/gradcheck_helpers.h"

using namespace vg;
using vg::testing::expect_gradients;
using vg::testing::variable;

TEST_CASE("sum, mean, max and var over chosen axes with keepdim") {
  Tensor a = arange(24, DType::f64).reshape({2, 3, 4});
  CHECK(sum(a).item() == 276);
  CHECK(sum(a, {0}).shape() == Shape{3, 4});
  CHECK(sum(a, {0}).at({0, 0}) == 12);
  CHECK(sum(a, {-1}, true).shape() == Shape{2, 3, 1});
  CHECK(sum(a, {-1}, true).at({1, 2, 0}) == 20 + 21 + 22 + 23);
  CHECK(sum(a, {0, 2}).to_vector() == std::vector<double>{60, 92, 124});
  CHECK(mean(a, {1}).at({0, 0}) == 4);
  CHECK(max(a, {1}).to_vector() == std::vector<double>{8, 9, 10, 11, 20, 21, 22, 23});
  CHECK(max(a, {0, 2}).to_vector() == std::vector<double>{15, 19, 23});
  // biased variance of 0..3 is 1.25
  CHECK(var(a, {2}).at({0, 0}) == doctest::Approx(1.25));
  CHECK_THROWS_WITH_AS(sum(a, {3}), doctest::Contains("sum: axis 3 out of range"), Error);
  CHECK_THROWS_WITH_AS(sum(a, {1, 1}), doctest::Contains("given twice"), Error);
}

TEST_CASE("sum_to_shape inverts broadcasting") {
  Tensor a = ones({2, 3, 4}, DType::f64);
  CHECK(sum_to_shape(a, {4}).to_vector() == std::vector<double>{6, 6, 6, 6});
  CHECK(sum_to_shape(a, {3, 1}).to_vector() == std::vector<double>{8, 8, 8});
  CHECK(sum_to_shape(a, {2, 1, 4}).shape() == Shape{2, 1, 4});
  CHECK_THROWS_AS(sum_to_shape(a, {5}), Error);
}

TEST_CASE("max sends the gradient to the first maximum") {
  Tensor x = from_vector(std::vector<double>{1, 5, 5, 2}, {4}).set_requires_grad();
  max(x).backward();
  CHECK(x.grad().to_vector() == std::vector<double>{0, 1, 0, 0});
}

TEST_CASE("reductions pass gradcheck over every set of axes") {
  Tensor x = variable({2, 3, 4}, 11);
  const std::vector<Axes> axes_sets{{}, {0}, {1}, {2}, {-1}, {0, 1}, {0, 2}, {1, 2}};
  for (const Axes& axes : axes_sets) {
    for (bool keep : {false, true}) {
      INFO("axes size ", axes.size(), " keepdim ", keep);
      expect_gradients("sum", [&](auto& in) { return sum(in[0], axes, keep); }, {x});
      expect_gradients("mean", [&](auto& in) { return mean(in[0], axes, keep); }, {x});
      expect_gradients("max", [&](auto& in) { return max(in[0], axes, keep); }, {x});
      expect_gradients("var", [&](auto& in) { return var(in[0], axes, keep); }, {x});
    }
  }
  expect_gradients("sum_to_shape", [](auto& in) { return sum_to_shape(in[0], {3, 1}); }, {x});
}

TEST_CASE("large sums are the same with 1 and 2 threads") {
  Tensor x = variable({300, 1000}, 12).detach().to(DType::f32);
  set_num_threads(1);
  const double one = sum(x).item();
  const std::vector<double> cols = sum(x, {0}).to_vector();
  set_num_threads(2);
  CHECK(sum(x).item() == one);
  CHECK(sum(x, {0}).to_vector() == cols);
}

TEST_CASE("long column sums (cut into row chunks) match a double reference on 1 and 2 threads") {
  // (rows, columns) sums over rows, as a bias gradient; and a middle axis with two column
  // blocks per outer index. Rows 1023..1025 and 5000 put the chunk edges in every place.
  for (const Shape& shape :
       {Shape{5000, 70}, Shape{1025, 3}, Shape{1023, 300}, Shape{3, 2100, 300}}) {
    CAPTURE(shape_str(shape));
    const int axis = shape.size() == 2 ? 0 : 1;
    const Tensor x64 = variable(shape, 21).detach();
    const Tensor x = x64.to(DType::f32);
    const std::vector<double> want = sum(x.to(DType::f64), {axis}).to_vector();
    const int threads = num_threads();
    set_num_threads(1);
    const std::vector<double> one = sum(x, {axis}).to_vector();
    set_num_threads(2);
    const std::vector<double> two = sum(x, {axis}).to_vector();
    set_num_threads(threads);
    CHECK(one == two);
    double worst = 0;
    for (size_t i = 0; i < want.size(); ++i)
      worst = std::max(worst, std::abs(one[i] - want[i]) / std::max(1.0, std::abs(want[i])));
    CHECK(worst < 1e-6);  // double sums: only the final rounding to float32
  }
}

TEST_CASE("a sum over an empty axis is zero, and its gradient has the input's shape") {
  // A batch of no rows: a linear's bias gradient sums an empty column.
  for (const Shape& shape : {Shape{0, 300}, Shape{0, 1}, Shape{2, 0, 5}}) {
    CAPTURE(shape_str(shape));
    Tensor x = zeros(shape);
    x.set_requires_grad();
    const Tensor s = sum(x, {shape.size() == 2 ? 0 : 1});
    CHECK(s.numel() == (shape.size() == 2 ? shape[1] : shape[0] * shape[2]));
    for (const double v : s.to_vector()) CHECK(v == 0.0);
    sum(s).backward();
    CHECK(x.grad().shape() == shape);
  }
}
