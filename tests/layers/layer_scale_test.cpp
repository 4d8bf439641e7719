#include "layers/layer_scale.h"

#include <doctest/doctest.h>

#include "engine/autograd/autograd.h"
#include "tests/layers/module_gradcheck.h"

using namespace vg;
using vg::nn::LayerScale;
using vg::testing::expect_module_gradients;
using vg::testing::randomize_parameters;
using vg::testing::variable;

TEST_CASE("LayerScale(768) on (2,196,768) keeps the shape and equals x * 1e-4") {
  Rng rng(1);
  LayerScale ls(768);
  const Tensor x = randn({2, 196, 768}, rng);
  const Tensor y = ls(x);
  CHECK(y.shape() == Shape{2, 196, 768});
  CHECK(y.dtype() == DType::f32);
  CHECK(y.to_vector() == mul(x, full({768}, 1e-4)).to_vector());
}

TEST_CASE("LayerScale has one parameter gamma, all init_value, without weight decay") {
  LayerScale ls(8, 0.1);
  const ParameterList params = ls.named_parameters();
  REQUIRE(params.size() == 1);
  CHECK(params[0].name == "gamma");
  CHECK(params[0].no_weight_decay);
  CHECK(params[0].tensor.shape() == Shape{8});
  CHECK(params[0].tensor.to_vector() == std::vector<double>(8, double(0.1f)));
  CHECK(LayerScale(4).gamma().to_vector() == std::vector<double>(4, double(1e-4f)));
  CHECK(ls.init_value() == 0.1);
}

TEST_CASE("LayerScale scales every channels-last rank: (B,T,C), (B,H,W,C), (B,T,H,W,C)") {
  LayerScale ls(3, 2.0);
  for (const Shape& shape : {Shape{2, 4, 3}, Shape{2, 2, 2, 3}, Shape{1, 2, 2, 2, 3}}) {
    INFO("input shape ", shape_str(shape));
    const Tensor x = arange(shape_numel(shape)).reshape(shape);
    const Tensor y = ls(x);
    CHECK(y.shape() == shape);
    CHECK(y.to_vector() == mul(x, 2.0).to_vector());
  }
}

TEST_CASE("LayerScale gradients: dx = gamma * dy, dgamma sums x * dy over batch and tokens") {
  LayerScale ls(2, 0.5);
  ls.to(DType::f64);
  // x (2 samples, 2 tokens, 2 channels), dy all ones except one element.
  const Tensor x =
      from_vector(std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2}).set_requires_grad();
  Tensor dy = ones({2, 2, 2}, DType::f64);
  dy.set_at({1, 1, 1}, 3.0);
  ls(x).backward(dy);
  CHECK(x.grad().to_vector() == std::vector<double>{0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 1.5});
  // channel 0: 1 + 3 + 5 + 7; channel 1: 2 + 4 + 6 + 3 * 8
  CHECK(ls.gamma().grad().to_vector() == std::vector<double>{16, 36});
}

TEST_CASE("LayerScale passes gradcheck on 3-, 4- and 5-D inputs and gamma") {
  LayerScale ls(4);
  ls.to(DType::f64);
  randomize_parameters(ls, 7);
  for (const Shape& shape : {Shape{2, 3, 4}, Shape{2, 2, 3, 4}, Shape{2, 1, 2, 3, 4}}) {
    INFO("input shape ", shape_str(shape));
    expect_module_gradients("LayerScale", ls, variable(shape, 8),
                            [&](const Tensor& x) { return ls(x); });
  }
}

TEST_CASE("LayerScale counts num_tokens * dim FLOPs, as the forward records") {
  LayerScale ls(768);
  for (const Shape& s : {Shape{2, 196, 768}, Shape{2, 14, 14, 768}}) {
    FlopCounter flops;
    ls(zeros(s));
    CHECK(flops.total() == 392.0 * 768);
  }
}

TEST_CASE("LayerScale rejects a channel mismatch with a message naming the shapes") {
  LayerScale ls(768);
  const char* message =
      "LayerScale(dim=768): input last axis is 512, expected 768 (input shape [2,196,512])";
  CHECK_THROWS_WITH_AS(ls(zeros({2, 196, 512})), message, Error);
  // A channels-first image is a mismatch too, not a silent broadcast.
  CHECK_THROWS_AS(ls(zeros({2, 768, 7, 7})), Error);
}
