// Anomaly mode on a whole ViT: a NaN or Inf injected into one block is reported with that
// block's module path, whether it first shows in the forward pass or in the backward pass.
#include <doctest/doctest.h>

#include <limits>

#include "engine/autograd/autograd.h"
#include "engine/ops/ops.h"
#include "models/vit.h"

using namespace vg;

namespace {

ViT small_vit() {
  ViTConfig c;
  c.depth = 4;
  c.embed_dim = 16;
  c.num_heads = 2;
  return ViT(c, 3);
}

Tensor parameter(ViT& model, const std::string& name) {
  for (const Parameter& p : model.named_parameters())
    if (p.name == name) return p.tensor;
  FAIL("no parameter ", name);
  return {};
}

Tensor images() {
  Tensor x = zeros({2, 28, 28, 1});
  float* p = x.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) p[i] = float((i * 37) % 11) / 11.0f - 0.5f;
  return x;
}

std::string anomaly_of_one_step(ViT& model) {
  AnomalyGuard anomaly;
  try {
    cross_entropy(model.forward(images()), {1, 7}).backward();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a NaN weight in blocks.2 is reported in the forward pass of blocks.2") {
  ViT model = small_vit();
  parameter(model, "blocks.2.mlp.fc1.weight").data<float>()[5] =
      std::numeric_limits<float>::quiet_NaN();
  const std::string message = anomaly_of_one_step(model);
  INFO(message);
  CHECK(message.find("anomaly: NaN in the forward of layer_norm_linear in blocks.2.mlp.fc1") !=
        std::string::npos);
}

TEST_CASE("a weight that overflows only the gradient is reported in the backward of its block") {
  // Attention outputs are small, so proj's forward stays finite with huge weights; the
  // gradient flowing back through those weights overflows.
  ViT model = small_vit();
  Tensor w = parameter(model, "blocks.2.attn.proj.weight");
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = 3e37f;
  const std::string message = anomaly_of_one_step(model);
  INFO(message);
  CHECK(message.find("in the backward") != std::string::npos);
  CHECK(message.find("in blocks.2.") != std::string::npos);
}

TEST_CASE("without anomaly mode the same NaN passes silently into the loss") {
  ViT model = small_vit();
  parameter(model, "blocks.2.mlp.fc1.weight").data<float>()[5] =
      std::numeric_limits<float>::quiet_NaN();
  CHECK(std::isnan(cross_entropy(model.forward(images()), {1, 7}).item()));
}

TEST_CASE("a log of a negative number inside a block scope names the block") {
  AnomalyGuard anomaly;
  ModuleScope blocks("blocks"), block("2"), mlp("mlp");
  CHECK_THROWS_WITH_AS(log(full({3}, -1.0)),
                       doctest::Contains("NaN in the forward of log in blocks.2.mlp"), Error);
}

TEST_CASE("sqrt at zero is finite forward and infinite backward, reported as backward") {
  Tensor x = zeros({3}, DType::f64);
  x.set_requires_grad();
  AnomalyGuard anomaly;
  ModuleScope blocks("blocks"), block("1");
  Tensor y = sum(sqrt(x));
  CHECK_THROWS_WITH_AS(y.backward(), doctest::Contains("Inf in the backward of sqrt in blocks.1"),
                       Error);
}
