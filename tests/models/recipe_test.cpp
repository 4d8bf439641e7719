// The LearnableScaler recipe: its preset, its training options and the auxiliary losses of
// the ViT.
#include <doctest/doctest.h>

#include "engine/autograd/autograd.h"
#include "engine/core/error.h"
#include "models/training.h"
#include "models/vit.h"

using namespace vg;

TEST_CASE("fmnist-ls-recipe: LearnableScaler everywhere, no LayerScale, and its training") {
  const TrainOptions o = training_defaults("fmnist-ls-recipe");
  CHECK(o.model == preset("fmnist-ls-recipe"));
  CHECK(o.model.norm == "learnable_scaler");
  CHECK(o.model.layerscale == "none");
  CHECK(o.model.depth == 24);
  CHECK(o.opt == "lamb");
  CHECK(o.wd == 0.02);
  CHECK(o.lr == 5e-3);
  CHECK(o.accum > 1);
  CHECK(o.sched == "learnable-scaler");
  CHECK(o.sched_factor == 0.8);
  CHECK(o.sched_threshold == 0.5);
  // The reference's effective weights: its summed extra loss is multiplied by
  // --train-feature-decay (0.1) a second time.
  CHECK(o.aux.feature_decay == doctest::Approx(0.01));
  CHECK(o.aux.attn_extra_loss == doctest::Approx(0.003));
  CHECK(o.aux.attn_layers == 6);
  o.validate();
  // Other presets keep the plain defaults.
  const TrainOptions plain = training_defaults("fmnist-deep");
  CHECK(plain.opt == TrainOptions{}.opt);
  CHECK_FALSE(plain.aux.any());
}

TEST_CASE("the auxiliary-loss options round-trip through JSON and are validated") {
  TrainOptions o = training_defaults("fmnist-ls-recipe");
  o.aux.feature_threshold = 12.5;
  o.aux.attn_layers = 3;
  const TrainOptions back = TrainOptions::from_json(o.to_json(), o.model);
  CHECK(back.aux.feature_decay == o.aux.feature_decay);
  CHECK(back.aux.feature_threshold == 12.5);
  CHECK(back.aux.attn_extra_loss == o.aux.attn_extra_loss);
  CHECK(back.aux.attn_layers == 3);
  o.aux.feature_decay = -1;
  CHECK_THROWS_WITH_AS(o.validate(), doctest::Contains("--feature-decay"), Error);
  o.aux.feature_decay = 0;
  o.aux.attn_layers = 0;
  CHECK_THROWS_WITH_AS(o.validate(), doctest::Contains("--attn-extra-loss-layers"), Error);
}

TEST_CASE("ViT with auxiliary losses: the same logits, and the sum of the blocks' terms") {
  ViTConfig c = preset("fmnist-ls-recipe");
  c.depth = 3;
  c.embed_dim = 16;
  c.num_heads = 2;
  ViT model(c, 5);
  Rng rng(6);
  const Tensor images = randn({2, 28, 28, 1}, rng);
  const std::vector<double> plain = model.forward(images).to_vector();
  Tensor extra;
  AuxLossConfig aux{0.5, 0.5, 0.25, 2};
  Tensor logits = model.forward(images, aux, &extra);
  const std::vector<double> with = logits.to_vector();
  for (size_t i = 0; i < plain.size(); ++i)
    CHECK(with[i] == doctest::Approx(plain[i]).epsilon(1e-5));
  CHECK(extra.item() > 0);
  // Only the hinge: the attention term is gone, so the extra loss drops.
  Tensor hinge_only;
  model.forward(images, AuxLossConfig{0.5, 0.5, 0.0, 2}, &hinge_only);
  CHECK(hinge_only.item() < extra.item());
  // Nothing on: a zero scalar, and backward from logits + extra still works.
  Tensor none;
  model.forward(images, AuxLossConfig{0, 200, 0, 6}, &none);
  CHECK(none.item() == 0);
  (sum(logits) + extra).backward();
  CHECK(model.block(0).attn().qkv().weight().grad().defined());
}
