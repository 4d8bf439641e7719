#include <doctest/doctest.h>

#include "engine/autograd/autograd.h"
#include "tests/engine/gradcheck_helpers.h"

using namespace vg;
using vg::testing::variable;

TEST_CASE("gradcheck finds a wrong backward and says where") {
  // A deliberately wrong op: forward x^2, backward claims 3x.
  auto wrong_square = [](const std::vector<Tensor>& in) {
    Tensor x = in[0];
    Tensor out = mul(x.detach(), x.detach());
    Tensor saved = x.detach();
    return record("wrong_square", out, {x},
                  [saved](const Tensor& g) { return std::vector<Tensor>{mul(g, saved * 3.0)}; });
  };
  Tensor x = variable({4}, 1, 2.0);
  GradcheckResult r = gradcheck(wrong_square, {x});
  CHECK_FALSE(r.passed);
  CHECK(r.max_rel_err > 0.3);
  CHECK(r.worst_input == 0);
  CHECK(r.summary().find("FAILED") == 0);
}

TEST_CASE("gradcheck checks only inputs that require grad and restores them") {
  Tensor x = variable({3}, 2);
  Tensor c = variable({3}, 3).detach();
  const std::vector<double> before = x.to_vector();
  GradcheckResult r = gradcheck([](auto& in) { return mul(in[0], in[1]); }, {x, c});
  CHECK(r.passed);
  CHECK(r.checked_elements == 3);
  CHECK(x.to_vector() == before);
  CHECK_FALSE(x.grad().defined());
}

TEST_CASE("gradcheck refuses float32 inputs") {
  Tensor x = ones({2}).set_requires_grad();
  CHECK_THROWS_WITH_AS(gradcheck([](auto& in) { return in[0]; }, {x}), doctest::Contains("float64"),
                       Error);
}

TEST_CASE("gradcheck that stops with an error leaves the inputs' gradients as it found them") {
  Tensor x = variable({3}, 4);
  int calls = 0;  // the first call (backward's) returns 3 values, the next ones 2
  auto changing = [&calls](const std::vector<Tensor>& in) {
    return ++calls == 1 ? mul(in[0], in[0]) : slice(mul(in[0], in[0]), 0, 0, 2);
  };
  CHECK_THROWS_WITH_AS(gradcheck(changing, {x}), doctest::Contains("output shape changed"), Error);
  CHECK_FALSE(x.grad().defined());
}
