#include "layers/layer_norm.h"

#include <doctest/doctest.h>

#include <cmath>

#include "engine/autograd/autograd.h"
#include "tests/layers/module_gradcheck.h"

using namespace vg;
using vg::nn::LayerNorm;
using vg::testing::expect_module_gradients;
using vg::testing::randomize_parameters;
using vg::testing::variable;

TEST_CASE("LayerNorm has weight ones and bias zeros, both without weight decay, eps 1e-6") {
  LayerNorm norm(8);
  const ParameterList params = norm.named_parameters();
  REQUIRE(params.size() == 2);
  CHECK(params[0].name == "weight");
  CHECK(params[1].name == "bias");
  CHECK(params[0].no_weight_decay);
  CHECK(params[1].no_weight_decay);
  CHECK(norm.weight().to_vector() == std::vector<double>(8, 1.0));
  CHECK(norm.bias().to_vector() == std::vector<double>(8, 0.0));
  CHECK(norm.eps() == 1e-6);
}

TEST_CASE("LayerNorm normalises each row with the biased variance and eps inside the sqrt") {
  LayerNorm norm(4);
  norm.to(DType::f64);
  const Tensor x = from_vector(std::vector<double>{1, 2, 3, 4, 5, 5, 5, 5}, {2, 4});
  const Tensor y = norm(x);
  // mean 2.5, biased variance 1.25: (x - 2.5) / sqrt(1.25 + 1e-6)
  const double r = 1 / std::sqrt(1.25 + 1e-6);
  const std::vector<double> expected{-1.5 * r, -0.5 * r, 0.5 * r, 1.5 * r, 0, 0, 0, 0};
  for (size_t i = 0; i < 8; ++i)
    CHECK(y.to_vector()[i] == doctest::Approx(expected[i]).epsilon(1e-12));
  // A constant row gives the bias.
  norm.load_state_dict({{"weight", ones({4}, DType::f64)},
                        {"bias", from_vector(std::vector<double>{1, 2, 3, 4}, {4})}});
  CHECK(select(norm(x), 0, 1).to_vector() == std::vector<double>{1, 2, 3, 4});
}

TEST_CASE("LayerNorm rows of dx sum to zero") {
  LayerNorm norm(6);
  norm.to(DType::f64);
  randomize_parameters(norm, 1);
  const Tensor x = variable({3, 6}, 2);
  norm(x).backward(variable({3, 6}, 3).detach());
  const Tensor row_sums = sum(x.grad(), {-1});
  for (double v : row_sums.to_vector()) CHECK(std::fabs(v) < 1e-12);
}

TEST_CASE("LayerNorm passes gradcheck on 2-, 3- and 4-D inputs, weight and bias") {
  LayerNorm norm(5);
  norm.to(DType::f64);
  randomize_parameters(norm, 4);
  for (const Shape& shape : {Shape{3, 5}, Shape{2, 3, 5}, Shape{2, 2, 3, 5}}) {
    INFO("input shape ", shape_str(shape));
    expect_module_gradients("LayerNorm", norm, variable(shape, 5),
                            [&](const Tensor& x) { return norm(x); });
  }
}

TEST_CASE("LayerNorm counts 8 FLOPs per element, as the forward records") {
  LayerNorm norm(64);
  FlopCounter flops;
  norm(zeros({2, 50, 64}));
  CHECK(flops.total() == 8.0 * 2 * 50 * 64);
}

TEST_CASE("LayerNorm rejects a last axis other than dim") {
  LayerNorm norm(64);
  CHECK_THROWS_WITH_AS(norm(zeros({2, 5, 32})),
                       "LayerNorm(dim=64): input last axis is 32, expected 64 (input shape "
                       "[2,5,32])",
                       Error);
}
