// A ViT on a batch of no images, as a PyTorch model takes it: logits of no rows, and every
// parameter a zero gradient (the class token and the position embedding, broadcast along the
// empty batch, included), in fp32 and with bf16 products.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "engine/kernels/matmul_precision.h"
#include "engine/ops/ops.h"
#include "tests/models/vit_helpers.h"

using namespace vg;
using vg::testing::small_config;

namespace {

struct Variant {
  std::string name;
  ViTConfig config;
};

std::vector<Variant> variants() {
  ViTConfig plain = small_config(2);
  ViTConfig scaler = plain;
  scaler.norm = NormKind::learnable_scaler;
  scaler.layerscale = LayerScaleSetting::fixed(1e-4);
  scaler.grn = true;
  ViTConfig stem = plain;  // the `make run` kind: a normed stem, patch 1, mean of the tokens
  stem.stem = {4, 8};
  stem.stem_norm = nn::StemNorm::layernorm;
  stem.patch_size = 1;
  stem.global_pool = GlobalPool::avg;
  return {{"plain", plain}, {"LearnableScaler, LayerScale, GRN", scaler}, {"stem", stem}};
}

}  // namespace

TEST_CASE("a ViT takes an empty batch: no logits, and zero gradients for every parameter") {
  for (const MatmulPrecision precision : {MatmulPrecision::fp32, MatmulPrecision::bf16}) {
    if (precision == MatmulPrecision::bf16 && bf16_hardware() == Bf16Hardware::none) continue;
    const MatmulPrecisionGuard mode(precision);
    for (const Variant& v : variants()) {
      INFO(v.name, ", bf16 ", precision == MatmulPrecision::bf16);
      ViT model(v.config, 5);
      const Tensor logits = model(zeros({0, 28, 28, 1}));
      CHECK(logits.shape() == Shape{0, 10});
      sum(logits).backward();
      for (const Parameter& p : model.named_parameters()) {
        INFO(p.name);
        REQUIRE(p.tensor.grad().defined());
        CHECK(p.tensor.grad().shape() == p.tensor.shape());
        bool zero = true;
        for (const double g : p.tensor.grad().to_vector()) zero = zero && g == 0.0;
        CHECK(zero);
      }
    }
  }
}
