#include "models/ema.h"

#include <doctest/doctest.h>

#include "engine/autograd/autograd.h"
#include "tests/models/vit_helpers.h"

using namespace vg;
using vg::testing::small_config;

namespace {

// Sets every parameter of `model` to values drawn from N(0, 1).
void scramble(ViT& model, uint64_t seed) {
  Rng rng(seed);
  NoGradGuard no_grad;
  for (const Parameter& p : model.named_parameters()) {
    const Tensor values = randn(p.tensor.shape(), rng);
    Tensor target = p.tensor;
    for (int64_t i = 0; i < values.numel(); ++i) target.data<float>()[i] = values.data<float>()[i];
  }
}

}  // namespace

TEST_CASE("ModelEma starts as a copy of the model, in eval mode") {
  ViTConfig config = small_config(2);
  config.drop_path_rate = 0.1;
  ViT model(config, 1);
  scramble(model, 2);
  ModelEma ema(model, 0.99);
  CHECK(ema.decay() == 0.99);
  CHECK(!ema.model().is_training());
  for (const auto& [name, tensor] : model.state_dict())
    CHECK_MESSAGE(ema.model().state_dict().at(name).to_vector() == tensor.to_vector(), name);
  model.eval();
  Rng rng(3);
  const Tensor images = randn({2, 28, 28, 1}, rng);
  CHECK(ema.model()(images).to_vector() == model(images).to_vector());
}

TEST_CASE("ModelEma.update computes p_ema = d * p_ema + (1 - d) * p, LayerScale gammas included") {
  ViTConfig config = small_config(2);
  config.layerscale = LayerScaleSetting::fixed(0.1);
  config.grn = true;
  ViT model(config, 1);
  ModelEma ema(model, 0.9);
  const nn::StateDict start = model.state_dict();
  std::map<std::string, std::vector<double>> old;
  for (const auto& [name, tensor] : start) old[name] = tensor.to_vector();
  scramble(model, 4);
  ema.update(model);
  const nn::StateDict shadow = ema.model().state_dict();
  REQUIRE(shadow.count("blocks.1.ls2.gamma"));
  for (const auto& [name, tensor] : model.state_dict()) {
    const std::vector<double> now = tensor.to_vector(), got = shadow.at(name).to_vector();
    for (size_t i = 0; i < now.size(); ++i)
      CHECK_MESSAGE(got[i] == doctest::Approx(0.9 * old[name][i] + 0.1 * now[i]).epsilon(1e-6),
                    name, "[", i, "]");
  }
  // decay 1 freezes the shadow; decay 0 copies the model.
  ModelEma frozen(model, 1.0), follower(model, 0.0);
  const nn::StateDict before = frozen.model().state_dict();
  const std::vector<double> kept = before.at("head.weight").to_vector();
  scramble(model, 5);
  frozen.update(model);
  follower.update(model);
  CHECK(frozen.model().state_dict().at("head.weight").to_vector() == kept);
  CHECK(follower.model().state_dict().at("head.weight").to_vector() ==
        model.state_dict().at("head.weight").to_vector());
}

TEST_CASE("ModelEma follows a model that gained LayerScale after it was built") {
  ViT model(small_config(2), 1);
  nn::apply_layerscale_to_blocks(model, 1e-4);
  ModelEma ema(model, 0.5);
  CHECK(ema.model().num_parameters() == model.num_parameters());
  scramble(model, 6);
  ema.update(model);
  const double p = model.state_dict().at("blocks.0.ls1.gamma").at({0});
  CHECK(ema.model().state_dict().at("blocks.0.ls1.gamma").at({0}) ==
        doctest::Approx(0.5 * double(1e-4f) + 0.5 * p).epsilon(1e-6));
}

TEST_CASE("ModelEma rejects a decay outside [0, 1]") {
  ViT model(small_config(1));
  CHECK_THROWS_WITH_AS(ModelEma(model, 1.5), "ModelEma: decay must be in [0, 1], got 1.5", Error);
  CHECK_THROWS_AS(ModelEma(model, -0.1), Error);
}
