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

TEST_CASE("layer-decay groups take the layer of each parameter from the model's rule") {
  const ParameterList params = {param("stem.w", {2, 2}, false), param("stem.b", {2}, true),
                                param("top.w", {2, 2}, false)};
  const auto layer = [](const std::string& name) { return name.starts_with("stem") ? 0 : 2; };
  const std::vector<ParamGroup> groups = param_groups_layer_decay(params, 0.1, 0.5, 3, layer);
  REQUIRE(groups.size() == 3);
  CHECK(groups[0].name == "layer_0_decay");
  CHECK(groups[0].lr_scale == 0.25);
  CHECK(groups[0].weight_decay == 0.1);
  CHECK(groups[1].name == "layer_0_no_decay");
  CHECK(groups[1].weight_decay == 0);
  CHECK(groups[2].name == "layer_2_decay");
  CHECK(groups[2].lr_scale == 1.0);
  CHECK_THROWS_WITH_AS(param_groups_layer_decay(params, 0.1, 0.5, 2, layer),
                       doctest::Contains("'top.w' is in layer 2, outside 0..1"), Error);
  CHECK_THROWS_WITH_AS(param_groups_layer_decay(params, 0.1, 0, 3, layer),
                       doctest::Contains("layer_decay"), Error);
}
