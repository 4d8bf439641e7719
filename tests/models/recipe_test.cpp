// The LearnableScaler recipe: its preset, its training options, its schedule and the
// auxiliary losses of the ViT.
#include <doctest/doctest.h>

#include <cmath>

#include "engine/autograd/autograd.h"
#include "engine/core/error.h"
#include "models/recipes/learnable_scaler.h"
#include "models/training.h"
#include "models/vit.h"

using namespace vg;
using namespace vg::recipes;
using nlohmann::json;

TEST_CASE("fmnist-ls-recipe: LearnableScaler everywhere, no LayerScale, and its training") {
  const TrainOptions o = training_defaults("fmnist-ls-recipe");
  CHECK(o.model == preset("fmnist-ls-recipe"));
  CHECK(o.model.norm == NormKind::learnable_scaler);
  CHECK(o.model.layerscale == LayerScaleSetting::none());
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

TEST_CASE("learnable-scaler custom schedule gives the recipe's check values for N=300") {
  const LearnableScalerSchedule s(0.005, 300);  // factor 0.8, threshold 0.5
  const std::pair<int64_t, double> expected[] = {{0, 0.8},        {100, 0.6},      {150, 0.4},
                                                 {175, 0.326627}, {198, 0.259123}, {250, 0.066987},
                                                 {299, 2.7e-5}};
  for (const auto& [e, value] : expected) {
    INFO("epoch ", e, ": multiplier ", s.multiplier(e), ", expected ", value);
    // the check values are rounded to 6 decimals (2.7e-5 to 2 significant digits)
    CHECK(std::abs(s.multiplier(e) - value) <= 5e-7);
    CHECK(s.lr(e) == doctest::Approx(0.005 * s.multiplier(e)));
  }
  // the unrounded values (Python, the recipe's formula in double)
  CHECK(s.multiplier(175) == doctest::Approx(0.3266266473693449).epsilon(1e-14));
  CHECK(s.multiplier(198) == doctest::Approx(0.2591231629491423).epsilon(1e-14));
  CHECK(s.multiplier(299) == doctest::Approx(2.7415317243928428e-05).epsilon(1e-12));
  // continuous at the two joints, and it stays at 0 once the run is over
  CHECK(s.multiplier(149) > s.multiplier(150));
  CHECK(s.multiplier(197) - s.multiplier(198) < 0.004);
  CHECK(s.multiplier(300) == doctest::Approx(0).scale(1));
  CHECK(s.multiplier(400) == s.multiplier(300));
}

TEST_CASE("the learnable-scaler schedule round-trips through JSON and rejects bad fields") {
  const LearnableScalerSchedule s(0.005, 300, 0.7, 0.4);
  const json j = json::parse(s.to_json().dump());
  CHECK(j == json{{"kind", "learnable_scaler"},
                  {"base_lr", 0.005},
                  {"num_epochs", 300},
                  {"factor", 0.7},
                  {"threshold", 0.4}});
  const LearnableScalerSchedule back = LearnableScalerSchedule::from_json(j);
  for (int64_t t : {0, 1, 9, 10, 57, 150, 199, 250, 400}) CHECK(back.lr(t) == s.lr(t));
  const auto fails = [](json bad, const char* expected) {
    INFO("input: ", bad.dump());
    CHECK_THROWS_WITH_AS(LearnableScalerSchedule::from_json(bad), doctest::Contains(expected),
                         Error);
  };
  json bad = j;
  bad["threshold"] = 1.5;
  fails(bad, "threshold must be in [0, 1]");
  bad = j;
  bad["num_epochs"] = 2.5;
  fails(bad, "'num_epochs' must be an integer");
  bad = j;
  bad["gamma"] = 0.1;
  fails(bad, "unknown field 'gamma'");
  bad = j;
  bad.erase("factor");
  fails(bad, "missing field 'factor'");
  CHECK_THROWS_WITH_AS(LearnableScalerSchedule(1, 0), doctest::Contains("num_epochs"), Error);
}
