#include "layers/activation.h"

#include <doctest/doctest.h>

#include "engine/autograd/autograd.h"
#include "tests/layers/module_gradcheck.h"

using namespace vg;
using vg::nn::GELU;
using vg::testing::expect_gradients_at_step;
using vg::testing::variable;

TEST_CASE("GELU is the exact erf form by default and the tanh form on request") {
  GELU exact, approx(GeluApprox::tanh);
  const Tensor x = from_vector(std::vector<double>{1, -1, 0}, {3});
  const std::vector<double> y = exact(x).to_vector();
  CHECK(y[0] == doctest::Approx(0.8413447461).epsilon(1e-10));
  CHECK(y[1] == doctest::Approx(-0.1586552539).epsilon(1e-10));
  CHECK(y[2] == 0);
  // 1.5e-4 apart at x = 1: a 1e-5 tolerance tells the two forms apart.
  CHECK(approx(x).to_vector()[0] == doctest::Approx(0.8411919906).epsilon(1e-10));
  CHECK(exact.named_parameters().empty());
}

TEST_CASE("GELU gradient: gelu'(0) = 0.5, gelu'(1) = 1.0833154706") {
  GELU gelu_layer;
  const Tensor x = from_vector(std::vector<double>{0, 1}, {2}).set_requires_grad();
  gelu_layer(x).backward(ones({2}, DType::f64));
  CHECK(x.grad().to_vector()[0] == doctest::Approx(0.5).epsilon(1e-12));
  CHECK(x.grad().to_vector()[1] == doctest::Approx(1.0833154706).epsilon(1e-10));
}

TEST_CASE("GELU passes gradcheck in both forms") {
  for (GeluApprox form : {GeluApprox::none, GeluApprox::tanh}) {
    GELU layer(form);
    INFO("tanh form ", form == GeluApprox::tanh);
    expect_gradients_at_step("GELU", [&](auto& in) { return layer(in[0]); },
                             {variable({2, 3, 4}, 1)});
  }
}

TEST_CASE("GELU counts 8 FLOPs per element (10 for the tanh form)") {
  {
    FlopCounter flops;
    GELU()(zeros({2, 50, 128}));
    CHECK(flops.total() == 8.0 * 2 * 50 * 128);
  }
  FlopCounter flops;
  GELU(GeluApprox::tanh)(zeros({2, 50, 128}));
  CHECK(flops.total() == 10.0 * 2 * 50 * 128);
}
