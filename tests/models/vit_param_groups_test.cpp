// Which parameters of the presets decay: pinned by name, so a renamed or re-tagged
// parameter shows up here rather than as a silently different training run.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "engine/optim/param_groups.h"
#include "models/vit.h"

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
  ls_grn.layerscale = "1e-4";
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
  scaler.norm = "learnable_scaler";
  scaler.global_pool = "avg";
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
