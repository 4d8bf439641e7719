#include "models/vit.h"

#include <doctest/doctest.h>

#include <cmath>
#include <tuple>

#include "engine/autograd/autograd.h"
#include "tests/layers/module_gradcheck.h"
#include "tests/models/vit_helpers.h"

using namespace vg;
using vg::testing::expect_gradients_at_step;
using vg::testing::input_and_parameters;
using vg::testing::max_abs_diff;
using vg::testing::randomize_parameters;
using vg::testing::small_config;
using vg::testing::submodule;
using vg::testing::variable;

namespace {

struct Entry {
  std::string name;
  Shape shape;
  bool no_weight_decay;
};

// Every parameter of `model` as (name, shape, tag), in registration order.
std::vector<Entry> entries(const ViT& model) {
  std::vector<Entry> out;
  for (const Parameter& p : model.named_parameters())
    out.push_back({p.name, p.tensor.shape(), p.no_weight_decay});
  return out;
}

// The ViT forward spelled out from the model's parts in timm's order: patches, the class
// token concatenated first, the positional embedding added to all T + 1 tokens, the blocks,
// then 'token' (final norm, token 0) or 'avg' (mean of the patch tokens, then fc_norm).
Tensor reference_forward(ViT& model, const Tensor& images) {
  const nn::StateDict p = model.state_dict();
  const Tensor& cls = p.at("cls_token");
  Tensor x = submodule<nn::PatchEmbed>(model, "patch_embed")(images);
  const int64_t B = x.size(0), T = x.size(1), E = x.size(2);
  x = add(cat({broadcast_to(cls, {B, 1, E}), x}, 1), p.at("pos_embed"));
  for (int64_t i = 0; i < model.depth(); ++i) x = model.block(i)(x);
  Tensor pooled;
  if (model.config().global_pool == GlobalPool::token)
    pooled = select(submodule(model, "norm")(x), 1, 0);
  else
    pooled = submodule(model, "fc_norm")(mean(slice(x, 1, 1, T + 1), {1}));
  return submodule<nn::Linear>(model, "head")(pooled);
}

bool all_finite(const Tensor& t) {
  for (double v : t.to_vector())
    if (!std::isfinite(v)) return false;
  return true;
}

}  // namespace

TEST_CASE("fmnist-tiny has 205,962 parameters, 206,730 with LayerScale (2 x dim x depth more)") {
  // cls 64 + pos 50*64 + patch 64*16+64 + 6 blocks * 33,472 + norm 128 + head 64*10+10.
  ViTConfig config = preset("fmnist-tiny");
  const ViT plain(config);
  CHECK(plain.num_parameters() == 205962);
  config.layerscale = LayerScaleSetting::fixed(1e-4);
  const ViT with_ls(config);
  CHECK(with_ls.num_parameters() == 206730);
  CHECK(with_ls.num_parameters() - plain.num_parameters() == 2 * 64 * 6);
  // Adding LayerScale to the built model gives the same count and the same names.
  ViT added(preset("fmnist-tiny"));
  nn::apply_layerscale_to_blocks(added, 1e-4);
  CHECK(added.num_parameters() == 206730);
  std::vector<std::string> a, b;
  for (const Parameter& p : added.named_parameters()) a.push_back(p.name);
  for (const Parameter& p : with_ls.named_parameters()) b.push_back(p.name);
  CHECK(a == b);
}

TEST_CASE("ViT::add_layerscale records LayerScale in the config, so the model rebuilds from it") {
  ViT model(preset("fmnist-tiny"));
  model.add_layerscale(1e-4);
  CHECK(model.num_parameters() == 206730);
  CHECK(model.config().layerscale_init() == 1e-4);
  ViT rebuilt(model.config(), /*seed=*/7);
  rebuilt.load_state_dict(model.state_dict());  // the same names and shapes, nothing missing
  for (const Parameter& p : rebuilt.named_parameters())
    CHECK(max_abs_diff(p.tensor, model.state_dict().at(p.name)) == 0);
  // A second LayerScale, or a bad init value, is refused and changes nothing.
  CHECK_THROWS_WITH_AS(model.add_layerscale(1e-4), doctest::Contains("already has LayerScale"),
                       Error);
  ViT plain(preset("fmnist-tiny"));
  CHECK_THROWS_AS(plain.add_layerscale(-1), Error);
  CHECK_THROWS_AS(plain.add_layerscale(std::nan("")), Error);
  CHECK(plain.num_parameters() == 205962);
  CHECK(plain.config().layerscale == LayerScaleSetting::none());
}

TEST_CASE("ViT parameters carry timm's names, shapes and no-weight-decay tags") {
  ViTConfig config = small_config(2);
  config.in_chans = 3;
  config.layerscale = LayerScaleSetting::fixed(0.1);
  config.grn = true;
  const ViT model(config);
  std::vector<Entry> expected{{"cls_token", {1, 1, 16}, true},
                              {"pos_embed", {1, 17, 16}, true},
                              {"patch_embed.proj.weight", {16, 3, 7, 7}, false},
                              {"patch_embed.proj.bias", {16}, true}};
  for (int i = 0; i < 2; ++i) {
    const std::string b = "blocks." + std::to_string(i) + ".";
    const std::vector<Entry> block{{b + "norm1.weight", {16}, true},
                                   {b + "norm1.bias", {16}, true},
                                   {b + "attn.qkv.weight", {48, 16}, false},
                                   {b + "attn.qkv.bias", {48}, true},
                                   {b + "attn.proj.weight", {16, 16}, false},
                                   {b + "attn.proj.bias", {16}, true},
                                   {b + "ls1.gamma", {16}, true},
                                   {b + "norm2.weight", {16}, true},
                                   {b + "norm2.bias", {16}, true},
                                   {b + "mlp.fc1.weight", {32, 16}, false},
                                   {b + "mlp.fc1.bias", {32}, true},
                                   {b + "mlp.grn.gamma", {32}, true},
                                   {b + "mlp.grn.beta", {32}, true},
                                   {b + "mlp.fc2.weight", {16, 32}, false},
                                   {b + "mlp.fc2.bias", {16}, true},
                                   {b + "ls2.gamma", {16}, true}};
    expected.insert(expected.end(), block.begin(), block.end());
  }
  const std::vector<Entry> tail{{"norm.weight", {16}, true},
                                {"norm.bias", {16}, true},
                                {"head.weight", {10, 16}, false},
                                {"head.bias", {10}, true}};
  expected.insert(expected.end(), tail.begin(), tail.end());
  const std::vector<Entry> got = entries(model);
  REQUIRE(got.size() == expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("entry ", i, ": ", got[i].name, " ", shape_str(got[i].shape));
    CHECK(got[i].name == expected[i].name);
    CHECK(got[i].shape == expected[i].shape);
    CHECK(got[i].no_weight_decay == expected[i].no_weight_decay);
  }
  // state_dict holds exactly these names and shapes.
  const nn::StateDict state = model.state_dict();
  CHECK(state.size() == expected.size());
  for (const Entry& e : expected) {
    REQUIRE_MESSAGE(state.count(e.name), e.name);
    CHECK(state.at(e.name).shape() == e.shape);
  }
}

TEST_CASE("With LearnableScaler every norm has a and b; avg pooling uses fc_norm, as timm") {
  ViTConfig config = small_config(1);
  config.norm = NormKind::learnable_scaler;
  config.global_pool = GlobalPool::avg;
  const ViT model(config);
  std::vector<std::tuple<std::string, bool>> norms;
  for (const Entry& e : entries(model))
    if (e.name.find("norm") != std::string::npos) norms.emplace_back(e.name, e.no_weight_decay);
  const std::vector<std::tuple<std::string, bool>> expected{
      {"blocks.0.norm1.a", true}, {"blocks.0.norm1.b", true}, {"blocks.0.norm2.a", true},
      {"blocks.0.norm2.b", true}, {"fc_norm.a", true},        {"fc_norm.b", true}};
  CHECK(norms == expected);
}

TEST_CASE("ViT initialises as timm: cls ~ N(0, 1e-6), pos_embed and Linear ~ N(0, .02), biases 0") {
  ViTConfig config = preset("fmnist-tiny");
  const nn::StateDict p = ViT(config, 3).state_dict();
  auto stddev = [](const Tensor& t) { return std::sqrt(mean(mul(t, t)).item()); };
  CHECK(stddev(p.at("cls_token")) > 0);
  CHECK(stddev(p.at("cls_token")) < 3e-6);
  CHECK(stddev(p.at("pos_embed")) == doctest::Approx(0.02).epsilon(0.1));
  CHECK(stddev(p.at("blocks.0.attn.qkv.weight")) == doctest::Approx(0.02).epsilon(0.05));
  CHECK(stddev(p.at("head.weight")) == doctest::Approx(0.02).epsilon(0.1));
  CHECK(max(abs(p.at("blocks.0.mlp.fc1.bias"))).item() == 0);
  CHECK(max(abs(p.at("head.bias"))).item() == 0);
  CHECK(p.at("norm.weight").to_vector() == std::vector<double>(64, 1.0));
  // The same seed gives the same model; another seed another one.
  CHECK(ViT(config, 3).state_dict().at("head.weight").to_vector() ==
        p.at("head.weight").to_vector());
  CHECK(ViT(config, 4).state_dict().at("head.weight").to_vector() !=
        p.at("head.weight").to_vector());
}

TEST_CASE("ViT forward: cls first, then pos_embed, blocks, and 'token' or 'avg' pooling") {
  for (const GlobalPool pool : {GlobalPool::token, GlobalPool::avg}) {
    INFO("global_pool ", to_string(pool));
    ViTConfig config = small_config(2);
    config.global_pool = pool;
    config.layerscale = LayerScaleSetting::fixed(0.1);
    config.grn = true;
    ViT model(config, 5);
    model.to(DType::f64);
    randomize_parameters(model, 6, 0.3);
    const Tensor images = variable({3, 28, 28, 1}, 7).detach();
    const Tensor logits = model(images);
    CHECK(logits.shape() == Shape{3, 10});
    CHECK(max_abs_diff(logits, reference_forward(model, images)) < 1e-12);
  }
}

TEST_CASE("ViT drop-path rates rise linearly from 0 to drop_path_rate over the blocks") {
  ViTConfig config = small_config(5);
  config.drop_path_rate = 0.2;
  ViT model(config);
  for (int64_t i = 0; i < 5; ++i) {
    const std::string b = "blocks." + std::to_string(i);
    CHECK(submodule<nn::DropPath>(model, b + ".drop_path1").drop_prob() ==
          doctest::Approx(0.05 * double(i)));
    CHECK(submodule<nn::DropPath>(model, b + ".drop_path2").drop_prob() ==
          doctest::Approx(0.05 * double(i)));
  }
  config.depth = 1;  // a single block gets rate 0, as linspace(0, r, 1) = [0]
  ViT one(config);
  CHECK(submodule<nn::DropPath>(one, "blocks.0.drop_path1").drop_prob() == 0);
}

TEST_CASE("ViT of depth 1 and depth 48 builds, runs forward and backward") {
  for (int64_t depth : {1, 48}) {
    INFO("depth ", depth);
    ViTConfig config = small_config(depth);
    config.layerscale = LayerScaleSetting::by_depth();
    ViT model(config, 1);
    CHECK(model.depth() == depth);
    // small_config: 16*1*49+16 + 16 + 17*16 + per block 2*(2*16) + 48*16+48 + 16*16+16 +
    // 32*16+32 + 16*32+16 + 2*16 (LayerScale) + final norm 32 + head 16*10+10.
    const int64_t per_block = 64 + 816 + 272 + 544 + 528 + 32;
    CHECK(model.num_parameters() == 800 + 16 + 272 + depth * per_block + 32 + 170);
    const double init = depth == 1 ? 0.1 : 1e-6;
    CHECK(model.block(depth - 1).ls2()->gamma().to_vector() ==
          std::vector<double>(16, double(float(init))));
    Rng rng(2);
    const Tensor logits = model(randn({2, 28, 28, 1}, rng));
    CHECK(logits.shape() == Shape{2, 10});
    CHECK(all_finite(logits));
    cross_entropy(logits, {3, 7}).backward();
    for (const Parameter& p : model.named_parameters()) {
      REQUIRE_MESSAGE(p.tensor.grad().defined(), p.name);
      CHECK_MESSAGE(all_finite(p.tensor.grad()), p.name);
    }
  }
}

TEST_CASE("ViT's traced parts account for every FLOP of its forward, for both poolings") {
  for (const GlobalPool pool : {GlobalPool::token, GlobalPool::avg}) {
    INFO("global_pool ", to_string(pool));
    ViTConfig config = small_config(2);
    config.global_pool = pool;
    config.layerscale = LayerScaleSetting::fixed(0.1);
    config.grn = true;
    ViT model(config);
    nn::ForwardTrace trace;
    FlopCounter flops;
    CHECK(model(zeros({2, 28, 28, 1})).shape() == Shape{2, 10});
    double parts = 0;  // the children's: patch_embed, blocks.i, norm or fc_norm, head
    for (const auto& call : trace.calls())
      for (const auto& [name, child] : model.children())
        parts += call.path == name ? call.flops : 0;
    // Outside the parts: the positional embedding's add over (2, 17, 16), and for avg
    // pooling the mean over the 16 patch tokens (a sum per element and a scale per output).
    const double glue = 2 * 17 * 16 + (pool == GlobalPool::avg ? 2 * 16 * 16 + 2 * 16 : 0);
    CHECK(flops.total() == parts + glue);
  }
}

TEST_CASE("A depth-2 ViT with LayerScale and GRN passes gradcheck end to end, each norm kind") {
  // Tiny sizes keep it fast: 8x8x1 images, patch 4 (4 tokens + cls), dim 8, 2 heads. The two
  // runs cover both norm kinds and both poolings.
  for (const auto& [norm, pool] : {std::pair{NormKind::layernorm, GlobalPool::token},
                                   std::pair{NormKind::learnable_scaler, GlobalPool::avg}}) {
    ViTConfig config;
    config.img_size = 8;
    config.patch_size = 4;
    config.in_chans = 1;
    config.num_classes = 3;
    config.embed_dim = 8;
    config.depth = 2;
    config.num_heads = 2;
    config.norm = norm;
    config.layerscale = LayerScaleSetting::fixed(0.1);
    config.grn = true;
    config.global_pool = pool;
    ViT model(config, 8);
    model.to(DType::f64);
    randomize_parameters(model, 9, 0.4);
    const std::vector<int32_t> labels{2, 0};
    const std::string what = "ViT depth 2 (" + to_string(norm) + ", " + to_string(pool) +
                             " pooling, LayerScale, GRN) -> cross_entropy";
    expect_gradients_at_step(
        what, [&](const std::vector<Tensor>& in) { return cross_entropy(model(in[0]), labels); },
        input_and_parameters(variable({2, 8, 8, 1}, 10), model));
  }
}

TEST_CASE("ViT rejects images of the wrong shape and weights of another configuration") {
  const ViT model(small_config(1));
  ViT copy(small_config(1));
  CHECK_THROWS_WITH_AS(copy(zeros({2, 32, 32, 1})),
                       doctest::Contains("images must be (B, 28, 28, 1), got [2,32,32,1]"), Error);
  CHECK_THROWS_AS(copy(zeros({2, 28, 28, 3})), Error);
  ViTConfig wider = small_config(1);
  wider.embed_dim = 32;
  CHECK_THROWS_WITH_AS(copy.load_state_dict(ViT(wider).state_dict()),
                       doctest::Contains("entry 'cls_token' has shape [1,1,32], expected [1,1,16]"),
                       Error);
  ViTConfig deeper = small_config(2);
  CHECK_THROWS_WITH_AS(copy.load_state_dict(ViT(deeper).state_dict()),
                       doctest::Contains("unexpected entry 'blocks.1."), Error);
  ViTConfig bad = small_config(1);
  bad.num_heads = 3;
  CHECK_THROWS_WITH_AS(ViT{bad}, "ViTConfig: embed_dim 16 is not divisible by num_heads 3", Error);
}
