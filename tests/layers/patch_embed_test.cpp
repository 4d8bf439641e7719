#include "layers/patch_embed.h"

#include <doctest/doctest.h>

#include <cmath>

#include "engine/autograd/autograd.h"
#include "tests/layers/module_gradcheck.h"

using namespace vg;
using vg::nn::PatchEmbed;
using vg::testing::expect_module_gradients;
using vg::testing::randomize_parameters;
using vg::testing::variable;

namespace {

// timm's PatchEmbed written as what it is, a Conv2d with kernel = stride = p on NCHW images
// followed by flatten(2).transpose(1, 2), with the images read channels-last:
//   out[b, i*Wp + j, d] = bias[d] + sum_{c,u,v} W[d,c,u,v] * img[b, i*p+u, j*p+v, c].
Tensor strided_conv(const Tensor& images, const Tensor& weight, const Tensor& bias, int64_t p) {
  const int64_t B = images.size(0), H = images.size(1), W = images.size(2), C = images.size(3);
  const int64_t E = weight.size(0), Hp = H / p, Wp = W / p;
  Tensor out = zeros({B, Hp * Wp, E}, DType::f64);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < Hp; ++i)
      for (int64_t j = 0; j < Wp; ++j)
        for (int64_t d = 0; d < E; ++d) {
          double acc = bias.at({d});
          for (int64_t c = 0; c < C; ++c)
            for (int64_t u = 0; u < p; ++u)
              for (int64_t v = 0; v < p; ++v)
                acc += weight.at({d, c, u, v}) * images.at({b, i * p + u, j * p + v, c});
          out.set_at({b, i * Wp + j, d}, acc);
        }
  return out;
}

}  // namespace

TEST_CASE("PatchEmbed stores timm's conv layout: proj.weight [E, C, p, p], proj.bias [E]") {
  Rng rng(1);
  PatchEmbed embed(28, 7, 3, 16, rng);
  const ParameterList params = embed.named_parameters();
  REQUIRE(params.size() == 2);
  CHECK(params[0].name == "proj.weight");
  CHECK(params[0].tensor.shape() == Shape{16, 3, 7, 7});
  CHECK(!params[0].no_weight_decay);
  CHECK(params[1].name == "proj.bias");
  CHECK(params[1].tensor.shape() == Shape{16});
  CHECK(params[1].no_weight_decay);
  CHECK(embed.num_patches() == 16);
  // PyTorch's default Conv2d init, which timm keeps: U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
  const double bound = 1.0 / std::sqrt(3.0 * 49);
  for (const Parameter& p : params) {
    CHECK(max(abs(p.tensor)).item() <= bound);
    CHECK(max(abs(p.tensor)).item() > 0.5 * bound);
  }
}

TEST_CASE("PatchEmbed equals a stride-p convolution with tokens in row-major patch order") {
  for (int64_t in_chans : {1, 3}) {
    INFO("in_chans ", in_chans);
    Rng rng(2);
    PatchEmbed embed(6, 2, in_chans, 5, rng);
    embed.to(DType::f64);
    randomize_parameters(embed, 3);
    const Tensor images = variable({2, 6, 6, in_chans}, 4).detach();
    const Tensor y = embed(images);
    REQUIRE(y.shape() == Shape{2, 9, 5});
    const Tensor expected = strided_conv(images, embed.proj().weight(), embed.proj().bias(), 2);
    CHECK(max(abs(sub(y, expected))).item() < 1e-12);
  }
}

TEST_CASE("PatchEmbed passes gradcheck for the images, weight and bias") {
  Rng rng(5);
  PatchEmbed embed(4, 2, 3, 4, rng);
  embed.to(DType::f64);
  randomize_parameters(embed, 6);
  expect_module_gradients("PatchEmbed", embed, variable({2, 4, 4, 3}, 7),
                          [&](const Tensor& x) { return embed(x); });
}

TEST_CASE("PatchEmbed counts (2 C p p + 1) E FLOPs per patch, as the forward records") {
  Rng rng(1);
  PatchEmbed embed(28, 4, 1, 64, rng);
  // 2 images x 49 patches, each (2*16 + 1) * 64.
  const double expected = 98.0 * 33 * 64;
  FlopCounter flops;
  const Tensor tokens = embed(zeros({2, 28, 28, 1}));
  CHECK(flops.total() == expected);
  CHECK(tokens.shape() == Shape{2, 49, 64});
}

TEST_CASE("PatchEmbed rejects images of the wrong size or channels and an uneven patch size") {
  Rng rng(1);
  const char* expected_shape =
      "PatchEmbed(img_size=28, patch_size=4, in_chans=1, embed_dim=64): images must be "
      "(B, 28, 28, 1), got ";
  PatchEmbed embed(28, 4, 1, 64, rng);
  CHECK_THROWS_WITH_AS(embed(zeros({2, 32, 32, 1})),
                       (std::string(expected_shape) + "[2,32,32,1]").c_str(), Error);
  // A channels-first batch is refused, not silently reinterpreted.
  CHECK_THROWS_WITH_AS(embed(zeros({2, 1, 28, 28})),
                       (std::string(expected_shape) + "[2,1,28,28]").c_str(), Error);
  CHECK_THROWS_AS(embed(zeros({28, 28, 1})), Error);
  CHECK_THROWS_WITH_AS(PatchEmbed(28, 5, 1, 64, rng),
                       "PatchEmbed(img_size=28, patch_size=5, in_chans=1, embed_dim=64): "
                       "img_size is not divisible by patch_size",
                       Error);
}
