// Which parameters of the presets decay: pinned by name, so a renamed or re-tagged
// parameter shows up here rather than as a silently different training run.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/optim/param_groups.h"
#include "models/vit.h"
#include "models/vit_layer_decay.h"

using namespace vg;
using Names = std::vector<std::string>;

namespace {

Names names(const optim::ParamGroup& g) {
  Names out;
  for (const Parameter& p : g.params) out.push_back(p.name);
  return out;
}

// The names of every block's parameters, block by block, in model order.
Names per_block(int64_t depth, const Names& suffixes) {
  Names out;
  for (int64_t i = 0; i < depth; ++i)
    for (const std::string& s : suffixes) out.push_back("blocks." + std::to_string(i) + "." + s);
  return out;
}

Names join(std::initializer_list<Names> parts) {
  Names out;
  for (const Names& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

void check_groups(const ViTConfig& config, const Names& no_decay, const Names& decay) {
  const ViT model(config);
  const auto groups = optim::param_groups_weight_decay(model.named_parameters(), 0.05);
  REQUIRE(groups.size() == 2);
  CHECK(groups[0].name == "no_decay");
  CHECK(groups[0].weight_decay == 0);
  CHECK(names(groups[0]) == no_decay);
  CHECK(groups[1].name == "decay");
  CHECK(groups[1].weight_decay == 0.05);
  CHECK(names(groups[1]) == decay);
  // timm's rule, checked independently of the tags: 1-D tensors, biases, pos_embed and
  // cls_token do not decay; every other weight does.
  for (const Parameter& p : model.named_parameters()) {
    INFO(p.name);
    const bool excluded = p.tensor.dim() <= 1 || p.name.ends_with(".bias") ||
                          p.name == "pos_embed" || p.name == "cls_token";
    CHECK(p.no_weight_decay == excluded);
  }
  const size_t total = model.named_parameters().size();
  CHECK(groups[0].params.size() + groups[1].params.size() == total);
}

}  // namespace

TEST_CASE("fmnist-tiny: parameter-group membership by name") {
  const ViTConfig tiny = preset("fmnist-tiny");
  REQUIRE(tiny.depth == 6);
  const Names no_decay =
      join({{"cls_token", "pos_embed", "patch_embed.proj.bias"},
            per_block(6, {"norm1.weight", "norm1.bias", "attn.qkv.bias", "attn.proj.bias",
                          "norm2.weight", "norm2.bias", "mlp.fc1.bias", "mlp.fc2.bias"}),
            {"norm.weight", "norm.bias", "head.bias"}});
  const Names decay = join(
      {{"patch_embed.proj.weight"},
       per_block(6, {"attn.qkv.weight", "attn.proj.weight", "mlp.fc1.weight", "mlp.fc2.weight"}),
       {"head.weight"}});
  CHECK(no_decay.size() == 54);
  CHECK(decay.size() == 26);
  check_groups(tiny, no_decay, decay);

  // With weight decay 0 everything is one group, as in timm.
  const ViT model(tiny);
  const auto one = optim::param_groups_weight_decay(model.named_parameters(), 0.0);
  REQUIRE(one.size() == 1);
  CHECK(one[0].params.size() == 80);
}

TEST_CASE("LayerScale, GRN and LearnableScaler parameters never decay") {
  ViTConfig ls_grn = preset("fmnist-tiny");
  ls_grn.depth = 2;
  ls_grn.layerscale = LayerScaleSetting::fixed(1e-4);
  ls_grn.grn = true;
  check_groups(ls_grn,
               join({{"cls_token", "pos_embed", "patch_embed.proj.bias"},
                     per_block(2, {"norm1.weight", "norm1.bias", "attn.qkv.bias", "attn.proj.bias",
                                   "ls1.gamma", "norm2.weight", "norm2.bias", "mlp.fc1.bias",
                                   "mlp.grn.gamma", "mlp.grn.beta", "mlp.fc2.bias", "ls2.gamma"}),
                     {"norm.weight", "norm.bias", "head.bias"}}),
               join({{"patch_embed.proj.weight"},
                     per_block(2, {"attn.qkv.weight", "attn.proj.weight", "mlp.fc1.weight",
                                   "mlp.fc2.weight"}),
                     {"head.weight"}}));

  ViTConfig scaler = preset("fmnist-tiny");
  scaler.depth = 2;
  scaler.norm = NormKind::learnable_scaler;
  scaler.global_pool = GlobalPool::avg;
  check_groups(scaler,
               join({{"cls_token", "pos_embed", "patch_embed.proj.bias"},
                     per_block(2, {"norm1.a", "norm1.b", "attn.qkv.bias", "attn.proj.bias",
                                   "norm2.a", "norm2.b", "mlp.fc1.bias", "mlp.fc2.bias"}),
                     {"fc_norm.a", "fc_norm.b", "head.bias"}}),
               join({{"patch_embed.proj.weight"},
                     per_block(2, {"attn.qkv.weight", "attn.proj.weight", "mlp.fc1.weight",
                                   "mlp.fc2.weight"}),
                     {"head.weight"}}));
}

namespace {

Parameter param(const std::string& name, const Shape& shape, bool no_weight_decay) {
  Parameter p;
  p.name = name;
  p.tensor = zeros(shape).set_requires_grad();
  p.no_weight_decay = no_weight_decay;
  return p;
}

// The parameters of a depth-2 ViT, tagged as its layers tag them.
ParameterList tiny_vit() {
  return {param("cls_token", {1, 1, 4}, true),
          param("pos_embed", {1, 5, 4}, true),
          param("patch_embed.proj.weight", {4, 1, 2, 2}, false),
          param("patch_embed.proj.bias", {4}, true),
          param("blocks.0.norm1.weight", {4}, true),
          param("blocks.0.attn.qkv.weight", {12, 4}, false),
          param("blocks.1.mlp.fc1.weight", {8, 4}, false),
          param("blocks.1.ls1.gamma", {4}, true),
          param("norm.weight", {4}, true),
          param("head.weight", {3, 4}, false),
          param("head.bias", {3}, true)};
}

}  // namespace

TEST_CASE("layer ids follow BEiT/timm: stem 0, block k -> k+1, final norm with the last block") {
  CHECK(vit_layer_id("cls_token", 2) == 0);
  CHECK(vit_layer_id("pos_embed", 2) == 0);
  CHECK(vit_layer_id("patch_embed.proj.weight", 2) == 0);
  CHECK(vit_layer_id("blocks.0.attn.qkv.weight", 2) == 1);
  CHECK(vit_layer_id("blocks.1.mlp.grn.gamma", 2) == 2);
  CHECK(vit_layer_id("norm.weight", 2) == 2);
  CHECK(vit_layer_id("fc_norm.bias", 2) == 2);
  CHECK(vit_layer_id("head.weight", 2) == 3);
  CHECK(vit_layer_id("blocks.11.norm1.a", 12) == 12);
  CHECK_THROWS_WITH_AS(vit_layer_id("blocks.2.attn.qkv.weight", 2),
                       doctest::Contains("depth is 2"), Error);
  CHECK_THROWS_WITH_AS(vit_layer_id("blocks.x.attn", 2), doctest::Contains("blocks.x.attn"),
                       Error);
}

TEST_CASE("layer-decay lr_scale values for depth 2, split by tag within each layer") {
  const double ld = 0.5;
  const std::vector<optim::ParamGroup> groups = vit_param_groups_layer_decay(tiny_vit(), 0.05, ld, 2);
  struct Expected {
    const char* name;
    double lr_scale, weight_decay;
    std::vector<std::string> params;
  };
  const std::vector<Expected> expected = {
      {"layer_0_no_decay", 0.125, 0, {"cls_token", "pos_embed", "patch_embed.proj.bias"}},
      {"layer_0_decay", 0.125, 0.05, {"patch_embed.proj.weight"}},
      {"layer_1_no_decay", 0.25, 0, {"blocks.0.norm1.weight"}},
      {"layer_1_decay", 0.25, 0.05, {"blocks.0.attn.qkv.weight"}},
      {"layer_2_decay", 0.5, 0.05, {"blocks.1.mlp.fc1.weight"}},
      {"layer_2_no_decay", 0.5, 0, {"blocks.1.ls1.gamma", "norm.weight"}},
      {"layer_3_decay", 1.0, 0.05, {"head.weight"}},
      {"layer_3_no_decay", 1.0, 0, {"head.bias"}},
  };
  REQUIRE(groups.size() == expected.size());
  for (size_t i = 0; i < groups.size(); ++i) {
    INFO("group ", i, " '", groups[i].name, "'");
    CHECK(groups[i].name == expected[i].name);
    CHECK(groups[i].lr_scale == expected[i].lr_scale);  // powers of 0.5 are exact
    CHECK(groups[i].weight_decay == expected[i].weight_decay);
    CHECK(names(groups[i]) == expected[i].params);
  }
  // A non-power-of-two decay: block 0 of depth 2 gets 0.75^2.
  const auto g75 = vit_param_groups_layer_decay(tiny_vit(), 0.05, 0.75, 2);
  CHECK(g75[2].lr_scale == doctest::Approx(0.5625));
  CHECK(g75[0].lr_scale == doctest::Approx(std::pow(0.75, 3)));
  CHECK_THROWS_WITH_AS(vit_param_groups_layer_decay(tiny_vit(), 0.05, 0, 2),
                       doctest::Contains("layer_decay"), Error);
}
