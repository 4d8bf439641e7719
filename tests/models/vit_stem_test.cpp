// A ViT with a convolutional stem: where the stem sits in the model (its names, its place in
// the forward, its parameter groups) and that checkpoints carry it.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "engine/optim/param_groups.h"
#include "models/restore.h"
#include "models/vit_layer_decay.h"
#include "tests/scratch_dir.h"
#include "tests/models/vit_helpers.h"

using namespace vg;
using vg::testing::small_config;
using vg::testing::submodule;

namespace {

// small_config with two stem stages (28 -> 14 -> 7) and patch 1: 49 tokens of 8 channels.
ViTConfig stem_config() {
  ViTConfig c = small_config(1);
  c.stem = {4, 8};
  c.patch_size = 1;
  return c;
}

std::vector<std::string> names(const ParameterList& params) {
  std::vector<std::string> out;
  for (const Parameter& p : params) out.push_back(p.name);
  return out;
}

}  // namespace

TEST_CASE("The stem's parameters follow pos_embed and precede patch_embed") {
  const ViT model(stem_config());
  const ParameterList params = model.named_parameters();
  const std::vector<std::string> all = names(params);
  REQUIRE(all.size() > 8);
  CHECK(std::vector<std::string>(all.begin(), all.begin() + 8) ==
        std::vector<std::string>{"cls_token", "pos_embed", "stem.conv1.weight", "stem.conv1.bias",
                                 "stem.conv2.weight", "stem.conv2.bias", "patch_embed.proj.weight",
                                 "patch_embed.proj.bias"});
  CHECK(params[1].tensor.shape() == Shape{1, 50, 16});  // 49 tokens and the class token
  CHECK(params[2].tensor.shape() == Shape{4, 1, 3, 3});
  CHECK(params[4].tensor.shape() == Shape{8, 4, 3, 3});
  CHECK(params[6].tensor.shape() == Shape{16, 8, 1, 1});
  // The stem comes after the draws of a model without one: those keep their values.
  const ViT plain(small_config(1));
  CHECK(plain.state_dict().at("cls_token").to_vector() ==
        model.state_dict().at("cls_token").to_vector());
}

TEST_CASE("A stem ViT runs the stem, then cuts its output into patches") {
  ViT model(stem_config(), 3);
  model.eval();
  Rng rng(4);
  const Tensor images = randn({2, 28, 28, 1}, rng);
  const Tensor features = submodule<nn::ConvStem>(model, "stem")(images);
  CHECK(features.shape() == Shape{2, 7, 7, 8});
  CHECK(submodule<nn::PatchEmbed>(model, "patch_embed")(features).shape() == Shape{2, 49, 16});
  const Tensor logits = model(images);
  CHECK(logits.shape() == Shape{2, 10});
  // The stem takes part: other stem weights, other logits.
  ViT other(stem_config(), 3);
  other.eval();
  Tensor w = submodule<nn::Conv2d>(other, "stem.conv1").weight();
  w.data<float>()[0] += 0.5f;
  CHECK(other(images).to_vector() != logits.to_vector());
  CHECK_THROWS_WITH_AS(model(zeros({2, 32, 32, 1})),
                       doctest::Contains("ConvStem(img_size=28, in_chans=1, channels=[4,8], strides=[2,2]): "
                                         "images must be (B, 28, 28, 1), got [2,32,32,1]"),
                       Error);
}

TEST_CASE("Stem conv weights decay, stem biases do not, and both sit in layer 0") {
  const ViT model(stem_config());
  const auto groups = optim::param_groups_weight_decay(model.named_parameters(), 0.05);
  REQUIRE(groups.size() == 2);
  const std::vector<std::string> no_decay = names(groups[0].params),
                                 decay = names(groups[1].params);
  auto has = [](const std::vector<std::string>& v, const char* name) {
    return std::find(v.begin(), v.end(), name) != v.end();
  };
  for (const char* conv : {"stem.conv1", "stem.conv2"}) {
    INFO(conv);
    CHECK(has(decay, (std::string(conv) + ".weight").c_str()));
    CHECK(has(no_decay, (std::string(conv) + ".bias").c_str()));
  }
  CHECK(vit_layer_id("stem.conv1.weight", 1) == 0);
  CHECK(vit_layer_id("stem.conv2.bias", 1) == 0);
}

TEST_CASE("A checkpoint of a stem ViT saves and restores the stem to the bit") {
  ViT model(stem_config(), 5);
  Checkpoint c;
  c.config = model.config().to_json();
  c.model = model.state_dict();
  CHECK(c.config.at("stem") == "conv:4,8");
  const std::filesystem::path path = vg::testing::scratch_dir("stem") / "stem.json";
  save_checkpoint(path.string(), c);
  const Checkpoint loaded = load_checkpoint(path.string());
  std::filesystem::remove(path);
  const ViTConfig config = checkpoint_config(loaded, "stem.json");
  CHECK(config == model.config());
  ViT restored(config, 99);  // other initial weights, all overwritten
  restore_checkpoint(loaded, "stem.json", {.model = &restored});
  for (const auto& [name, t] : model.state_dict()) {
    INFO(name);
    CHECK(std::memcmp(t.raw_data(), restored.state_dict().at(name).raw_data(), t.numel() * 4) == 0);
  }
  model.eval();
  restored.eval();
  const Tensor images = ones({1, 28, 28, 1});
  CHECK(model(images).to_vector() == restored(images).to_vector());
  // A model without the stem does not take these weights.
  ViT plain(small_config(1));
  CHECK_THROWS_AS(restore_checkpoint(loaded, "stem.json", {.model = &plain}), Error);
}
