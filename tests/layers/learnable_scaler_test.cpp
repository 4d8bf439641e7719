#include "layers/learnable_scaler.h"

#include <doctest/doctest.h>

#include <cmath>

#include "engine/autograd/autograd.h"
#include "tests/layers/module_gradcheck.h"

using namespace vg;
using vg::nn::LearnableScaler;
using vg::nn::LearnableScaler2d;
using vg::testing::expect_module_gradients;
using vg::testing::randomize_parameters;
using vg::testing::variable;

TEST_CASE("LearnableScaler draws a from N(0, 1), not ones, and starts b at zero") {
  Rng rng(2024);
  LearnableScaler ls(4096, rng);
  const std::vector<double> a = ls.a().to_vector();
  double mean = 0, sq = 0;
  int64_t negative = 0;
  for (double v : a) {
    mean += v;
    negative += v < 0;
  }
  mean /= a.size();
  for (double v : a) sq += (v - mean) * (v - mean);
  const double std = std::sqrt(sq / (a.size() - 1));
  INFO("mean ", mean, ", std ", std, ", negative ", negative);
  // Standard errors for 4096 draws: 0.016 for the mean, 0.011 for the std.
  CHECK(std::fabs(mean) < 0.05);
  CHECK(std::fabs(std - 1) < 0.05);
  CHECK(negative > 1800);
  CHECK(ls.b().to_vector() == std::vector<double>(4096, 0.0));
}

TEST_CASE("LearnableScaler's a comes from the generator it is given; ones_init gives ones") {
  Rng rng1(7), rng2(7), rng3(7);
  LearnableScaler ls(16, rng1);
  CHECK(ls.a().to_vector() == randn({16}, rng2).to_vector());
  CHECK(LearnableScaler(16, rng3, true).a().to_vector() == std::vector<double>(16, 1.0));
  Rng rng4(7);
  CHECK(LearnableScaler2d(16, rng4).a().to_vector() == ls.a().to_vector());
  Rng rng5(7);
  CHECK(LearnableScaler2d(16, rng5, true).a().to_vector() == std::vector<double>(16, 1.0));
}

TEST_CASE("LearnableScaler parameters are a and b, both without weight decay") {
  Rng rng(1);
  for (const ParameterList& params :
       {LearnableScaler(8, rng).named_parameters(), LearnableScaler2d(8, rng).named_parameters()}) {
    REQUIRE(params.size() == 2);
    CHECK(params[0].name == "a");
    CHECK(params[1].name == "b");
    CHECK(params[0].no_weight_decay);
    CHECK(params[1].no_weight_decay);
    CHECK(params[0].tensor.shape() == Shape{8});
  }
}

TEST_CASE("LearnableScaler computes a * x + b over the last axis; da = sum x dy, db = sum dy") {
  Rng rng(1);
  LearnableScaler ls(2, rng);
  ls.to(DType::f64);
  ls.load_state_dict({{"a", from_vector(std::vector<double>{2, -3}, {2})},
                      {"b", from_vector(std::vector<double>{0.5, 1}, {2})}});
  const Tensor x =
      from_vector(std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2}).set_requires_grad();
  const Tensor y = ls(x);
  CHECK(y.to_vector() == std::vector<double>{2.5, -5, 6.5, -11, 10.5, -17, 14.5, -23});
  Tensor dy = ones({2, 2, 2}, DType::f64);
  dy.set_at({1, 1, 1}, 3.0);
  y.backward(dy);
  CHECK(x.grad().to_vector() == std::vector<double>{2, -3, 2, -3, 2, -3, 2, -9});
  CHECK(ls.a().grad().to_vector() == std::vector<double>{16, 36});
  CHECK(ls.b().grad().to_vector() == std::vector<double>{4, 6});
}

TEST_CASE("LearnableScaler passes gradcheck on 3-, 4- and 5-D inputs, a and b") {
  Rng rng(3);
  LearnableScaler ls(4, rng);
  ls.to(DType::f64);
  randomize_parameters(ls, 4);
  for (const Shape& shape : {Shape{2, 3, 4}, Shape{2, 2, 3, 4}, Shape{2, 1, 2, 3, 4}}) {
    INFO("input shape ", shape_str(shape));
    expect_module_gradients("LearnableScaler", ls, variable(shape, 5),
                            [&](const Tensor& x) { return ls(x); });
  }
}

TEST_CASE("LearnableScaler2d scales (B, C, H, W) per channel on axis 1") {
  Rng rng(5);
  LearnableScaler2d ls(3, rng);
  ls.to(DType::f64);
  randomize_parameters(ls, 6);
  const Tensor x = variable({2, 3, 4, 5}, 7);
  const Tensor y = ls(x);
  REQUIRE(y.shape() == Shape{2, 3, 4, 5});
  for (int64_t c = 0; c < 3; ++c)
    CHECK(y.at({1, c, 2, 3}) ==
          doctest::Approx(ls.a().at({c}) * x.at({1, c, 2, 3}) + ls.b().at({c})).epsilon(1e-15));
  // The 2d variant reduces its parameter gradients over (N, H, W).
  y.backward(ones(y.shape(), DType::f64));
  const Tensor per_channel = sum(x.detach(), {0, 2, 3});
  for (int64_t c = 0; c < 3; ++c) {
    CHECK(ls.a().grad().at({c}) == doctest::Approx(per_channel.at({c})).epsilon(1e-14));
    CHECK(ls.b().grad().at({c}) == 40);
  }
  expect_module_gradients("LearnableScaler2d", ls, variable({2, 3, 4, 5}, 8),
                          [&](const Tensor& t) { return ls(t); });
}

TEST_CASE("LearnableScaler counts 2 * num_tokens * C FLOPs, as the forward records") {
  Rng rng(1);
  LearnableScaler ls(64, rng);
  {
    FlopCounter flops;
    ls(zeros({2, 50, 64}));
    CHECK(flops.total() == 2.0 * 100 * 64);
  }
  LearnableScaler2d ls2d(8, rng);
  FlopCounter flops;
  ls2d(zeros({2, 8, 7, 7}));
  CHECK(flops.total() == 2.0 * 2 * 49 * 8);
}

TEST_CASE("LearnableScaler rejects a channel mismatch with a message naming the shapes") {
  Rng rng(1);
  LearnableScaler ls(64, rng);
  CHECK_THROWS_WITH_AS(
      ls(zeros({2, 5, 32})),
      "LearnableScaler(num_channels=64): input last axis is 32, expected 64 (input shape [2,5,32])",
      Error);
  LearnableScaler2d ls2d(8, rng);
  CHECK_THROWS_WITH_AS(
      ls2d(zeros({2, 4, 5, 5})),
      "LearnableScaler2d(num_channels=8): input axis 1 is 4, expected 8 (input shape [2,4,5,5])",
      Error);
  CHECK_THROWS_WITH_AS(
      ls2d(zeros({2, 5, 8})),
      "LearnableScaler2d(num_channels=8): input must be (B, C, H, W), got shape [2,5,8]", Error);
}
