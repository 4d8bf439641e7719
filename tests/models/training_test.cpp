// The arithmetic of the training loop, on a real ViT.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>

#include "engine/ops/ops.h"
#include "engine/optim/adamw.h"
#include "models/vit.h"

using namespace vg;

TEST_CASE("gradient accumulation over k micro-batches of a ViT equals one big batch") {
  ViTConfig config;
  config.patch_size = 7;
  config.embed_dim = 16;
  config.depth = 2;
  config.num_heads = 2;
  config.layerscale = LayerScaleSetting::fixed(0.1);
  config.grn = true;
  Rng rng(3);
  const Tensor images = randn({8, 28, 28, 1}, rng, DType::f64);
  const std::vector<int32_t> labels = {0, 3, 9, 1, 1, 5, 7, 2};
  for (int64_t k : {2, 4}) {
    INFO("k = ", k, " micro-batches of ", 8 / k);
    ViT big(config, 1), accumulated(config, 1);
    big.to(DType::f64);
    accumulated.to(DType::f64);
    cross_entropy(big.forward(images), labels).backward();
    // As the training loop does: each micro-batch's mean loss divided by k, and .grad
    // summing over the backward() calls.
    const int64_t n = 8 / k;
    for (int64_t i = 0; i < k; ++i) {
      const std::vector<int32_t> part(labels.begin() + i * n, labels.begin() + (i + 1) * n);
      mul(cross_entropy(accumulated.forward(slice(images, 0, i * n, (i + 1) * n)), part),
          1.0 / double(k))
          .backward();
    }
    const ParameterList a = big.named_parameters(), b = accumulated.named_parameters();
    double worst = 0;
    for (size_t p = 0; p < a.size(); ++p) {
      const std::vector<double> ga = a[p].tensor.grad().to_vector(),
                                gb = b[p].tensor.grad().to_vector();
      double scale = 1e-300, diff = 0;  // relative to the tensor's largest gradient
      for (size_t i = 0; i < ga.size(); ++i) {
        scale = std::max(scale, std::abs(ga[i]));
        diff = std::max(diff, std::abs(ga[i] - gb[i]));
      }
      worst = std::max(worst, diff / scale);
    }
    CHECK(worst < 1e-10);  // float64: only the order of the sums differs

    // and the AdamW step that follows moves both models the same way
    optim::AdamW opt_a(optim::param_groups_weight_decay(a, 0.05));
    optim::AdamW opt_b(optim::param_groups_weight_decay(b, 0.05));
    opt_a.set_lr(1e-3);
    opt_b.set_lr(1e-3);
    opt_a.step();
    opt_b.step();
    double moved = 0;
    for (size_t p = 0; p < a.size(); ++p) {
      const std::vector<double> wa = a[p].tensor.to_vector(), wb = b[p].tensor.to_vector();
      for (size_t i = 0; i < wa.size(); ++i) moved = std::max(moved, std::abs(wa[i] - wb[i]));
    }
    CHECK(moved < 1e-12);
  }
}
