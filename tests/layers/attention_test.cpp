#include "layers/attention.h"

#include <doctest/doctest.h>

#include <cmath>

#include "engine/autograd/autograd.h"
#include "tests/layers/module_gradcheck.h"

using namespace vg;
using vg::nn::Attention;
using vg::testing::expect_module_gradients;
using vg::testing::max_abs_diff;
using vg::testing::randomize_parameters;
using vg::testing::variable;

namespace {

// timm's non-fused Attention written head by head from plain ops: head h of q, k and v are
// the rows [h*hd, (h+1)*hd) of the q, k and v blocks of qkv.weight (q | k | v, in that
// order), the scale is hd^-0.5 on q k^T, and the head outputs are concatenated in order.
Tensor reference_attention(Attention& attn, const Tensor& x) {
  const int64_t C = attn.dim(), H = attn.num_heads(), hd = C / H;
  const Tensor& w = attn.qkv().weight();
  const Tensor& b = attn.qkv().bias();
  auto project = [&](int64_t block, int64_t h) {
    const int64_t start = block * C + h * hd;
    Tensor out = matmul(x, slice(w, 0, start, start + hd), false, true);
    return b.defined() ? add(out, slice(b, 0, start, start + hd)) : out;
  };
  std::vector<Tensor> heads;
  for (int64_t h = 0; h < H; ++h) {
    const Tensor q = project(0, h), k = project(1, h), v = project(2, h);
    const Tensor p = softmax(mul(matmul(q, k, false, true), std::pow(double(hd), -0.5)));
    heads.push_back(matmul(p, v));
  }
  return linear(cat(heads, 2), attn.proj().weight(), attn.proj().bias());
}

}  // namespace

TEST_CASE("Attention has timm's parameters: qkv [3C, C] (+ bias), proj [C, C] + bias") {
  Rng rng(1);
  Attention attn(8, 2, true, rng);
  const ParameterList params = attn.named_parameters();
  REQUIRE(params.size() == 4);
  CHECK(params[0].name == "qkv.weight");
  CHECK(params[0].tensor.shape() == Shape{24, 8});
  CHECK(!params[0].no_weight_decay);
  CHECK(params[1].name == "qkv.bias");
  CHECK(params[1].tensor.shape() == Shape{24});
  CHECK(params[1].no_weight_decay);
  CHECK(params[2].name == "proj.weight");
  CHECK(params[2].tensor.shape() == Shape{8, 8});
  CHECK(params[3].name == "proj.bias");
  CHECK(params[3].no_weight_decay);
  CHECK(attn.num_parameters() == 24 * 8 + 24 + 8 * 8 + 8);
  Attention no_bias(8, 2, false, rng);
  CHECK(no_bias.num_parameters() == 24 * 8 + 8 * 8 + 8);
  CHECK(no_bias.named_parameters()[1].name == "proj.weight");
}

TEST_CASE("Attention reads q | k | v with heads contiguous and scales by head_dim^-0.5") {
  for (bool qkv_bias : {true, false}) {
    INFO("qkv_bias ", qkv_bias);
    Rng rng(2);
    Attention attn(12, 3, qkv_bias, rng);
    attn.to(DType::f64);
    randomize_parameters(attn, 3);
    const Tensor x = variable({2, 5, 12}, 4).detach();
    const Tensor y = attn(x);
    CHECK(y.shape() == Shape{2, 5, 12});
    CHECK(max_abs_diff(y, reference_attention(attn, x)) < 1e-12);
  }
}

TEST_CASE("Attention mixes tokens: changing one token changes every output token") {
  Rng rng(5);
  Attention attn(8, 2, true, rng);
  attn.to(DType::f64);
  randomize_parameters(attn, 6, 0.3);  // an unsaturated softmax: every key gets weight
  Tensor x = variable({1, 4, 8}, 7).detach();
  const Tensor before = attn(x);
  x.set_at({0, 3, 0}, x.at({0, 3, 0}) + 1.0);
  const Tensor after = attn(x);
  for (int64_t t = 0; t < 4; ++t)
    CHECK(max_abs_diff(select(before, 1, t), select(after, 1, t)) > 1e-6);
}

TEST_CASE("Attention passes gradcheck for the input, qkv and proj, with and without qkv bias") {
  for (bool qkv_bias : {true, false}) {
    INFO("qkv_bias ", qkv_bias);
    Rng rng(8);
    Attention attn(8, 2, qkv_bias, rng);
    attn.to(DType::f64);
    randomize_parameters(attn, 9, 0.5);
    expect_module_gradients("Attention", attn, variable({2, 4, 8}, 10),
                            [&](const Tensor& x) { return attn(x); });
  }
}

TEST_CASE("Attention counts qkv, proj, the two attention products and the softmax") {
  Rng rng(1);
  Attention attn(8, 2, true, rng);
  // B=2, T=5, C=8, H=2: qkv 2*10*8*24 + 10*24, proj 2*10*8*8 + 10*8,
  // q k^T and P v 4*B*T*T*C, softmax 5*B*H*T*T.
  const double expected = (3840 + 240) + (1280 + 80) + 1600 + 500;
  FlopCounter flops;
  const Tensor y = attn(zeros({2, 5, 8}));
  CHECK(flops.total() == expected);
  CHECK(y.shape() == Shape{2, 5, 8});
}

TEST_CASE("Attention rejects dim not divisible by num_heads and inputs of the wrong shape") {
  Rng rng(1);
  CHECK_THROWS_WITH_AS(Attention(10, 3, true, rng),
                       "Attention(dim=10, num_heads=3): dim must be a positive multiple of "
                       "num_heads",
                       Error);
  CHECK_THROWS_AS(Attention(8, 0, true, rng), Error);
  Attention attn(8, 2, true, rng);
  CHECK_THROWS_WITH_AS(
      attn(zeros({2, 5, 6})),
      "Attention(dim=8, num_heads=2): input last axis is 6, expected 8 (input shape [2,5,6])",
      Error);
  CHECK_THROWS_WITH_AS(attn(zeros({5, 8})),
                       "Attention(dim=8, num_heads=2): input must be (B, T, C), got [5,8]", Error);
  CHECK_THROWS_AS(attn(zeros({2, 2, 5, 8})), Error);
}

TEST_CASE("Attention's unfused path gives the fused output and rows of probabilities") {
  Rng rng(3);
  Attention attn(8, 2, true, rng);
  attn.to(DType::f64);
  randomize_parameters(attn, 5);
  Tensor x = variable({2, 5, 8}, 6).detach();
  Tensor probs;
  const std::vector<double> fused = attn.forward(x).to_vector();
  const std::vector<double> unfused = attn.forward(x, &probs).to_vector();
  REQUIRE(fused.size() == unfused.size());
  for (size_t i = 0; i < fused.size(); ++i)
    CHECK(unfused[i] == doctest::Approx(fused[i]).epsilon(1e-12));
  CHECK(probs.shape() == Shape{2, 2, 5, 5});
  for (double s : sum(probs, {-1}).to_vector()) CHECK(s == doctest::Approx(1.0));
}

TEST_CASE("Attention's unfused path: float64 gradient check of the output and the probabilities") {
  Rng rng(4);
  Attention attn(8, 2, true, rng);
  attn.to(DType::f64);
  randomize_parameters(attn, 7);
  Tensor x = variable({2, 4, 8}, 8);
  expect_module_gradients("Attention unfused", attn, x, [&](const Tensor& in) {
    Tensor probs;
    Tensor y = attn.forward(in, &probs);
    return sum(y) + sum(probs * probs);
  });
}
