#include <doctest/doctest.h>

#include <cmath>

#include "engine/autograd/autograd.h"
#include "tests/engine/gradcheck_helpers.h"
#include "tests/engine/nn_references.h"

using namespace vg;
using vg::testing::expect_gradients;
using vg::testing::row_sums;
using vg::testing::variable;

TEST_CASE("softmax rows sum to one and match known numbers") {
  Tensor x = from_vector(std::vector<double>{1, 2, 3}, {3});
  const std::vector<double> y = softmax(x).to_vector();
  CHECK(y[0] == doctest::Approx(0.09003057).epsilon(1e-7));
  CHECK(y[1] == doctest::Approx(0.24472847).epsilon(1e-7));
  CHECK(y[2] == doctest::Approx(0.66524096).epsilon(1e-7));
  for (DType dt : {DType::f32, DType::f64}) {
    Tensor r = variable({3, 4, 9}, 1).detach().to(dt) * 4.0;
    for (double s : row_sums(softmax(r))) CHECK(s == doctest::Approx(1.0).epsilon(1e-6));
  }
}

TEST_CASE("log_softmax is the log of softmax") {
  Tensor x = variable({4, 6}, 2).detach() * 3.0;
  const std::vector<double> a = log_softmax(x).to_vector(), b = log(softmax(x)).to_vector();
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == doctest::Approx(b[i]).epsilon(1e-12));
}

TEST_CASE("softmax and log_softmax of large logits stay finite") {
  for (DType dt : {DType::f32, DType::f64}) {
    Tensor x = from_vector(std::vector<double>{1000, 1001}, {1, 2}, dt);
    CHECK(softmax(x).at({0, 0}) == doctest::Approx(0.2689414213699951).epsilon(1e-6));
    CHECK(softmax(x).at({0, 1}) == doctest::Approx(0.7310585786300049).epsilon(1e-6));
    CHECK(log_softmax(x).at({0, 1}) == doctest::Approx(-0.3132616875182228).epsilon(1e-6));
  }
}

TEST_CASE("softmax and log_softmax pass gradcheck on 2-D, 3-D and 4-D inputs") {
  for (const Shape& shape : {Shape{3, 5}, Shape{2, 3, 4}, Shape{2, 2, 3, 4}, Shape{4, 1}}) {
    INFO("shape ", shape_str(shape));
    Tensor x = variable(shape, 3);
    expect_gradients("softmax", [](auto& in) { return softmax(in[0]); }, {x});
    expect_gradients("log_softmax", [](auto& in) { return log_softmax(in[0]); }, {x});
  }
}
