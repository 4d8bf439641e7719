#include "engine/optim/param_groups.h"

#include <doctest/doctest.h>

#include <cmath>

#include "engine/core/error.h"

using namespace vg;
using namespace vg::optim;

namespace {

Parameter param(const std::string& name, const Shape& shape, bool no_weight_decay) {
  Parameter p;
  p.name = name;
  p.tensor = zeros(shape).set_requires_grad();
  p.no_weight_decay = no_weight_decay;
  return p;
}

std::vector<std::string> names(const ParamGroup& g) {
  std::vector<std::string> out;
  for (const Parameter& p : g.params) out.push_back(p.name);
  return out;
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

TEST_CASE("weight-decay groups follow the tags, not the rank") {
  ParameterList params = {param("untagged_vector", {4}, false),  // 1-D but not tagged: decays
                          param("pos_embed", {1, 5, 4}, true),   // 3-D but tagged: no decay
                          param("fc.weight", {3, 4}, false), param("frozen.weight", {3, 4}, false)};
  params[3].tensor.set_requires_grad(false);
  const std::vector<ParamGroup> groups = param_groups_weight_decay(params, 0.05);
  REQUIRE(groups.size() == 2);
  CHECK(groups[0].name == "no_decay");  // timm's order: [no_decay, decay]
  CHECK(groups[0].weight_decay == 0);
  CHECK(names(groups[0]) == std::vector<std::string>{"pos_embed"});
  CHECK(groups[1].name == "decay");
  CHECK(groups[1].weight_decay == 0.05);
  CHECK(names(groups[1]) == std::vector<std::string>{"untagged_vector", "fc.weight"});
  CHECK(groups[1].lr_scale == 1);
}

TEST_CASE("weight-decay groups: empty groups are omitted and wd 0 gives one group") {
  const ParameterList tagged = {param("a", {4}, true), param("b", {4}, true)};
  const auto only_no_decay = param_groups_weight_decay(tagged, 0.1);
  REQUIRE(only_no_decay.size() == 1);
  CHECK(only_no_decay[0].name == "no_decay");
  const ParameterList untagged = {param("w", {2, 2}, false)};
  REQUIRE(param_groups_weight_decay(untagged, 0.1).size() == 1);
  CHECK(param_groups_weight_decay(untagged, 0.1)[0].name == "decay");

  const auto all = param_groups_weight_decay(tiny_vit(), 0.0);
  REQUIRE(all.size() == 1);
  CHECK(all[0].weight_decay == 0);
  CHECK(all[0].params.size() == tiny_vit().size());
  CHECK_THROWS_WITH_AS(param_groups_weight_decay(untagged, -1), doctest::Contains("weight_decay"),
                       Error);
}

TEST_CASE("layer ids follow BEiT/timm: stem 0, block k -> k+1, final norm with the last block") {
  CHECK(layer_id_for_name("cls_token", 2) == 0);
  CHECK(layer_id_for_name("pos_embed", 2) == 0);
  CHECK(layer_id_for_name("patch_embed.proj.weight", 2) == 0);
  CHECK(layer_id_for_name("blocks.0.attn.qkv.weight", 2) == 1);
  CHECK(layer_id_for_name("blocks.1.mlp.grn.gamma", 2) == 2);
  CHECK(layer_id_for_name("norm.weight", 2) == 2);
  CHECK(layer_id_for_name("fc_norm.bias", 2) == 2);
  CHECK(layer_id_for_name("head.weight", 2) == 3);
  CHECK(layer_id_for_name("blocks.11.norm1.a", 12) == 12);
  CHECK_THROWS_WITH_AS(layer_id_for_name("blocks.2.attn.qkv.weight", 2),
                       doctest::Contains("depth is 2"), Error);
  CHECK_THROWS_WITH_AS(layer_id_for_name("blocks.x.attn", 2), doctest::Contains("blocks.x.attn"),
                       Error);
}

TEST_CASE("layer-decay lr_scale values for depth 2, split by tag within each layer") {
  const double ld = 0.5;
  const std::vector<ParamGroup> groups = param_groups_layer_decay(tiny_vit(), 0.05, ld, 2);
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
  const auto g75 = param_groups_layer_decay(tiny_vit(), 0.05, 0.75, 2);
  CHECK(g75[2].lr_scale == doctest::Approx(0.5625));
  CHECK(g75[0].lr_scale == doctest::Approx(std::pow(0.75, 3)));
  CHECK_THROWS_WITH_AS(param_groups_layer_decay(tiny_vit(), 0.05, 0, 2),
                       doctest::Contains("layer_decay"), Error);
}
