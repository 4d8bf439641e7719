#include "layers/conv_stem.h"

#include <doctest/doctest.h>

#include <cmath>

#include "tests/layers/module_gradcheck.h"

using namespace vg;
using vg::nn::Conv2d;
using vg::nn::ConvStem;
using vg::nn::StemStage;
using vg::testing::expect_module_gradients;
using vg::testing::randomize_parameters;
using vg::testing::variable;

TEST_CASE("Conv2d keeps PyTorch's layout and default init, and decays only its weight") {
  Rng rng(1);
  Conv2d conv(3, 8, 3, 2, 1, rng);
  const ParameterList params = conv.named_parameters();
  REQUIRE(params.size() == 2);
  CHECK(params[0].name == "weight");
  CHECK(params[0].tensor.shape() == Shape{8, 3, 3, 3});
  CHECK(!params[0].no_weight_decay);
  CHECK(params[1].name == "bias");
  CHECK(params[1].tensor.shape() == Shape{8});
  CHECK(params[1].no_weight_decay);
  // PyTorch's kaiming_uniform_(a=sqrt(5)) and bias init: both U(-1/sqrt(fan_in), ...).
  const double bound = 1.0 / std::sqrt(27.0);
  for (const Parameter& p : params) {
    CHECK(max(abs(p.tensor)).item() <= bound);
    CHECK(max(abs(p.tensor)).item() > 0.5 * bound);
  }
  // The weight is drawn first, then the bias, from the generator given.
  Rng again(1);
  const Tensor w = nn::conv_default_uniform({8, 3, 3, 3}, 27, again);
  const Tensor b = nn::conv_default_uniform({8}, 27, again);
  CHECK(w.to_vector() == conv.weight().to_vector());
  CHECK(b.to_vector() == conv.bias().to_vector());
  const Tensor x = variable({2, 7, 6, 3}, 2).detach().to(DType::f32);
  CHECK(conv(x).to_vector() == conv2d(x, conv.weight(), conv.bias(), 2, 1).to_vector());
  CHECK(conv.output_size(7) == 4);
}

TEST_CASE("ConvStem halves the side per stage and names its parts conv<i> and act<i>") {
  Rng rng(1);
  ConvStem stem(28, 1, {32, 64}, rng);
  CHECK(stem.output_size() == 7);
  CHECK(stem.out_channels() == 64);
  std::vector<std::string> names;
  for (const Parameter& p : stem.named_parameters()) names.push_back(p.name);
  CHECK(names ==
        std::vector<std::string>{"conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias"});
  std::vector<std::string> children;
  for (const auto& [name, module] : stem.children()) children.push_back(name);
  CHECK(children == std::vector<std::string>{"conv1", "act1", "conv2", "act2"});
  CHECK(stem(zeros({2, 28, 28, 1})).shape() == Shape{2, 7, 7, 64});
  // 28 -> 14 -> 7 -> 4 -> 2 -> 1: odd sides round up.
  CHECK(ConvStem::output_size(28, {4, 4, 4}) == 4);
  CHECK(ConvStem::output_size(28, {4, 4, 4, 4, 4}) == 1);
  CHECK(ConvStem::output_size(32, {}) == 32);
  CHECK(ConvStem(28, 1, {4, 4, 4}, rng)(zeros({1, 28, 28, 1})).shape() == Shape{1, 4, 4, 4});
}

TEST_CASE("A ConvStem stage of stride 1 keeps the side; its convolution has that stride") {
  Rng rng(2);
  const std::vector<StemStage> stages{StemStage(8, 1), StemStage(16), StemStage(16, 1)};
  ConvStem stem(28, 1, stages, rng);
  CHECK(stem.output_size() == 14);  // 28 -> 28 -> 14 -> 14
  CHECK(ConvStem::output_size(7, {StemStage(3, 1), StemStage(3)}) == 4);
  CHECK(stem(zeros({2, 28, 28, 1})).shape() == Shape{2, 14, 14, 16});
  CHECK(stem.describe() ==
        "ConvStem(img_size=28, in_chans=1, channels=[8,16,16], strides=[1,2,1])");
  const Tensor x = variable({1, 28, 28, 1}, 3).detach().to(DType::f32);
  const auto& p = stem.named_parameters();
  Tensor want = gelu(conv2d(x, p[0].tensor, p[1].tensor, 1, 1));
  want = gelu(conv2d(want, p[2].tensor, p[3].tensor, 2, 1));
  want = gelu(conv2d(want, p[4].tensor, p[5].tensor, 1, 1));
  CHECK(stem(x).to_vector() == want.to_vector());
}

TEST_CASE("ConvStem is GELU after each convolution, in stage order") {
  Rng rng(3);
  ConvStem stem(9, 2, {3, 5}, rng);
  const Tensor x = variable({2, 9, 9, 2}, 4).detach().to(DType::f32);
  const auto& p = stem.named_parameters();
  const Tensor h = gelu(conv2d(x, p[0].tensor, p[1].tensor, 2, 1));
  const Tensor want = gelu(conv2d(h, p[2].tensor, p[3].tensor, 2, 1));
  CHECK(want.shape() == Shape{2, 3, 3, 5});
  CHECK(stem(x).to_vector() == want.to_vector());
}

TEST_CASE("A ConvStem with StemNorm::layernorm normalises each pixel's channels before GELU") {
  Rng rng(4);
  ConvStem stem(9, 2, {StemStage(3, 1), StemStage(5)}, rng, nn::StemNorm::layernorm);
  CHECK(stem.describe() ==
        "ConvStem(img_size=9, in_chans=2, channels=[3,5], strides=[1,2], norm=layernorm)");
  std::vector<std::string> children;
  for (const auto& [name, module] : stem.children()) children.push_back(name);
  CHECK(children == std::vector<std::string>{"conv1", "norm1", "act1", "conv2", "norm2", "act2"});
  ParameterList p = stem.named_parameters();
  REQUIRE(p.size() == 8);
  CHECK(p[2].name == "norm1.weight");
  CHECK(p[2].tensor.shape() == Shape{3});
  CHECK(p[2].no_weight_decay);
  CHECK(p[7].name == "norm2.bias");
  // The convolutions draw the same numbers as in a stem without norms.
  Rng again(4);
  ConvStem plain(9, 2, {StemStage(3, 1), StemStage(5)}, again);
  CHECK(plain.named_parameters()[2].tensor.to_vector() == p[4].tensor.to_vector());
  // Non-trivial norm parameters, so that a swapped weight and bias would show (in float64,
  // as randomize_parameters makes them).
  stem.to(DType::f64);
  randomize_parameters(stem, 5, 0.5);
  p = stem.named_parameters();
  Tensor x = variable({2, 9, 9, 2}, 4).detach();
  Tensor want =
      gelu(layer_norm(conv2d(x, p[0].tensor, p[1].tensor, 1, 1), p[2].tensor, p[3].tensor, 1e-6));
  want = gelu(
      layer_norm(conv2d(want, p[4].tensor, p[5].tensor, 2, 1), p[6].tensor, p[7].tensor, 1e-6));
  CHECK(want.shape() == Shape{2, 5, 5, 5});
  CHECK(stem(x).to_vector() == want.to_vector());
  // Every pixel of the first stage's normalised map has mean 0 and variance 1 over its
  // channels: checked on a stem whose norms are still ones and zeros.
  ConvStem fresh(9, 2, {StemStage(4, 1)}, again, nn::StemNorm::layernorm);
  x = x.to(DType::f32);
  const ParameterList q = fresh.named_parameters();
  const Tensor h =
      layer_norm(conv2d(x, q[0].tensor, q[1].tensor, 1, 1), q[2].tensor, q[3].tensor, 1e-6);
  const std::vector<double> v = h.to_vector();
  for (size_t pixel = 0; pixel < v.size() / 4; ++pixel) {
    double mean = 0, square = 0;
    for (size_t c = 0; c < 4; ++c) mean += v[pixel * 4 + c] / 4;
    for (size_t c = 0; c < 4; ++c)
      square += (v[pixel * 4 + c] - mean) * (v[pixel * 4 + c] - mean) / 4;
    CHECK(std::abs(mean) < 1e-5);
    CHECK(square == doctest::Approx(1.0).epsilon(1e-3));
  }
}

TEST_CASE("Conv2d and ConvStem pass gradcheck for the images and every parameter") {
  Rng rng(5);
  Conv2d conv(2, 3, 3, 2, 1, rng);
  conv.to(DType::f64);
  randomize_parameters(conv, 6, 0.5);
  expect_module_gradients("Conv2d", conv, variable({2, 5, 6, 2}, 7),
                          [&](const Tensor& x) { return conv(x); });
  ConvStem stem(7, 2, {StemStage(3, 1), StemStage(4)}, rng);  // a stride-1 stage, then stride 2
  stem.to(DType::f64);
  randomize_parameters(stem, 8, 0.5);
  expect_module_gradients("ConvStem", stem, variable({2, 7, 7, 2}, 9),
                          [&](const Tensor& x) { return stem(x); });
  ConvStem normed(7, 2, {StemStage(3, 1), StemStage(4)}, rng, nn::StemNorm::layernorm);
  normed.to(DType::f64);
  randomize_parameters(normed, 10, 0.5);  // norm weights and biases away from 1 and 0
  expect_module_gradients("ConvStem with LayerNorms", normed, variable({2, 7, 7, 2}, 11),
                          [&](const Tensor& x) { return normed(x); });
}

TEST_CASE("Conv2d and ConvStem reject wrong images with one clear error") {
  Rng rng(1);
  ConvStem stem(28, 1, {8, 16}, rng);
  CHECK_THROWS_WITH_AS(stem(zeros({2, 1, 28, 28})),
                       "ConvStem(img_size=28, in_chans=1, channels=[8,16], strides=[2,2]): "
                       "images must be "
                       "(B, 28, 28, 1), got [2,1,28,28]",
                       Error);
  CHECK_THROWS_WITH_AS(stem(zeros({2, 32, 32, 1})), doctest::Contains("got [2,32,32,1]"), Error);
  CHECK_THROWS_WITH_AS(ConvStem(28, 1, {}, rng),
                       "ConvStem(img_size=28, in_chans=1, channels=[], strides=[]): needs at least "
                       "one stage",
                       Error);
  CHECK_THROWS_WITH_AS(ConvStem(28, 1, {StemStage(8, 3)}, rng),
                       "ConvStem(img_size=28, in_chans=1, channels=[8], strides=[3]): a stage's "
                       "stride must be 1 or 2",
                       Error);
  CHECK_THROWS_WITH_AS(ConvStem(28, 1, {8, 0}, rng),
                       "Conv2d(8, 0, kernel_size=3, stride=2, padding=1): sizes must be positive "
                       "(padding >= 0)",
                       Error);
  Conv2d conv(3, 8, 3, 1, 1, rng);
  CHECK_THROWS_WITH_AS(conv(zeros({1, 5, 5, 2})),
                       "Conv2d(3, 8, kernel_size=3, stride=1, padding=1): input last axis is 2, "
                       "expected 3 (input shape [1,5,5,2])",
                       Error);
  CHECK_THROWS_WITH_AS(conv(zeros({5, 5, 3})),
                       "Conv2d(3, 8, kernel_size=3, stride=1, padding=1): input must be "
                       "(N, H, W, 3), got [5,5,3]",
                       Error);
}
