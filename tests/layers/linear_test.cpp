#include "layers/linear.h"

#include <doctest/doctest.h>

#include <cmath>

#include "tests/layers/module_gradcheck.h"

using namespace vg;
using vg::nn::Linear;
using vg::testing::expect_module_gradients;
using vg::testing::randomize_parameters;
using vg::testing::variable;

TEST_CASE("Linear initialises weight like timm (trunc_normal std .02) and bias at zero") {
  Rng rng(1);
  Linear fc(256, 128, true, rng);
  const ParameterList params = fc.named_parameters();
  REQUIRE(params.size() == 2);
  CHECK(params[0].name == "weight");
  CHECK(params[0].tensor.shape() == Shape{128, 256});
  CHECK(!params[0].no_weight_decay);  // matrices are decayed
  CHECK(params[1].name == "bias");
  CHECK(params[1].tensor.shape() == Shape{128});
  CHECK(params[1].no_weight_decay);
  CHECK(fc.bias().to_vector() == std::vector<double>(128, 0.0));
  const std::vector<double> w = fc.weight().to_vector();
  double mean = 0, sq = 0, largest = 0;
  for (double v : w) mean += v;
  mean /= w.size();
  for (double v : w) {
    sq += (v - mean) * (v - mean);
    largest = std::max(largest, std::fabs(v));
  }
  const double std = std::sqrt(sq / w.size());
  INFO("mean ", mean, ", std ", std);
  CHECK(std::fabs(mean) < 1e-3);
  CHECK(std == doctest::Approx(0.02).epsilon(0.02));
  CHECK(largest <= 2.0);
}

TEST_CASE("Linear without bias has only a weight") {
  Rng rng(1);
  Linear fc(4, 3, false, rng);
  CHECK(fc.named_parameters().size() == 1);
  CHECK(!fc.bias().defined());
  CHECK(fc.num_parameters() == 12);
}

TEST_CASE("Linear computes x W^T + b over the last axis") {
  Rng rng(1);
  Linear fc(2, 3, true, rng);
  fc.to(DType::f64);
  fc.load_state_dict({{"weight", from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {3, 2})},
                      {"bias", from_vector(std::vector<double>{0.5, -1, 2}, {3})}});
  const Tensor x = from_vector(std::vector<double>{1, -1, 2, 0.5}, {2, 1, 2});
  const Tensor y = fc(x);
  REQUIRE(y.shape() == Shape{2, 1, 3});
  // [1,-1]: [1-2, 3-4, 5-6] + b; [2,0.5]: [2+1, 6+2, 10+3] + b
  CHECK(y.to_vector() == std::vector<double>{-0.5, -2, 1, 3.5, 7, 15});
}

TEST_CASE("Linear passes gradcheck on 2-, 3- and 4-D inputs, weight and bias") {
  Rng rng(2);
  for (bool bias : {true, false}) {
    Linear fc(4, 3, bias, rng);
    fc.to(DType::f64);
    randomize_parameters(fc, 3);
    for (const Shape& shape : {Shape{5, 4}, Shape{2, 3, 4}, Shape{2, 2, 3, 4}}) {
      INFO("bias ", bias, ", input shape ", shape_str(shape));
      expect_module_gradients("Linear", fc, variable(shape, 4),
                              [&](const Tensor& x) { return fc(x); });
    }
  }
}

TEST_CASE("Linear counts 2 * rows * in * out FLOPs, plus rows * out for the bias") {
  Rng rng(1);
  Linear with_bias(64, 192, true, rng), without_bias(64, 192, false, rng);
  for (Linear* fc : {&with_bias, &without_bias}) {
    FlopCounter flops;
    const Tensor y = (*fc)(zeros({2, 50, 64}));
    CHECK(y.shape() == Shape{2, 50, 192});
    CHECK(flops.total() == 2.0 * 100 * 64 * 192 + (fc == &with_bias ? 100 * 192 : 0));
    CHECK(flops.matmul() == 2.0 * 100 * 64 * 192);
  }
}

TEST_CASE("Linear rejects a last axis other than in_features") {
  Rng rng(1);
  Linear fc(64, 192, true, rng);
  const char* message =
      "Linear(in_features=64, out_features=192): input last axis is 32, "
      "expected 64 (input shape [2,5,32])";
  CHECK_THROWS_WITH_AS(fc(zeros({2, 5, 32})), message, Error);
}
