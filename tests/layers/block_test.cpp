#include "layers/block.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <map>

#include "engine/autograd/autograd.h"
#include "engine/core/storage.h"
#include "engine/kernels/matmul_precision.h"
#include "layers/layer_norm.h"
#include "layers/learnable_scaler.h"
#include "tests/engine/bf16_tiles_helpers.h"
#include "tests/layers/module_gradcheck.h"

using namespace vg;
using vg::nn::Block;
using vg::nn::LayerScale;
using vg::nn::Module;
using vg::nn::NormKind;
using vg::testing::expect_module_gradients;
using vg::testing::max_abs_diff;
using vg::testing::randomize_parameters;
using vg::testing::variable;

namespace {

// A Block with dim 8, 2 heads, MLP ratio 2, qkv bias, in float64 with N(0, scale^2)
// parameters.
std::unique_ptr<Block> make_block(NormKind norm, double layerscale, bool grn,
                                  double drop_path = 0.0, std::shared_ptr<Rng> drop_rng = nullptr,
                                  double scale = 1.0) {
  Rng rng(1);
  auto block = std::make_unique<Block>(8, 2, 2.0, true, norm, layerscale, grn, drop_path, 0.0, rng,
                                       drop_rng);
  block->to(DType::f64);
  randomize_parameters(*block, 2, scale);
  return block;
}

std::vector<std::string> parameter_names(const Module& m) {
  std::vector<std::string> names;
  for (const Parameter& p : m.named_parameters()) names.push_back(p.name);
  return names;
}

Module& child(const Module& m, const std::string& name) {
  for (const auto& [n, c] : m.children())
    if (n == name) return *c;
  FAIL("no child ", name);
  throw Error("unreachable");
}

// A norm written out from its parameters: LayerNorm (eps 1e-6) or a * x + b.
Tensor reference_norm(const Module& norm, const Tensor& x) {
  const nn::StateDict p = norm.state_dict();
  if (p.count("a")) return add(mul(x, p.at("a")), p.at("b"));
  return layer_norm(x, p.at("weight"), p.at("bias"), 1e-6);
}

// The residual branches of a block, from its children (dropout 0, so mode-independent).
Tensor attn_branch(Block& block, const Tensor& x) {
  Tensor y = block.attn()(reference_norm(block.norm1(), x));
  return block.ls1() ? mul(y, block.ls1()->gamma()) : y;
}
Tensor mlp_branch(Block& block, const Tensor& x) {
  Tensor y = block.mlp()(reference_norm(child(block, "norm2"), x));
  return block.ls2() ? mul(y, block.ls2()->gamma()) : y;
}

// A model of `depth` blocks, as a ViT holds them ("blocks.i"), plus a head.
class Stack : public Module {
 public:
  Stack(int64_t depth, NormKind norm) : Module("Stack") {
    Rng rng(3);
    for (int64_t i = 0; i < depth; ++i)
      blocks.push_back(register_module(
          "blocks." + std::to_string(i),
          std::make_shared<Block>(8, 2, 2.0, true, norm, 0.0, true, 0.0, 0.0, rng, nullptr)));
    head = register_module("head", std::make_shared<nn::Linear>(8, 3, true, rng));
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = x;
    for (const auto& block : blocks) h = (*block)(h);
    return (*head)(h);
  }
  std::vector<std::shared_ptr<Block>> blocks;
  std::shared_ptr<nn::Linear> head;
};

}  // namespace

TEST_CASE("Block names its parameters as timm: norm1, attn, ls1, norm2, mlp (grn), ls2") {
  const std::vector<std::string> attn{"attn.qkv.weight", "attn.qkv.bias", "attn.proj.weight",
                                      "attn.proj.bias"};
  const std::vector<std::string> fc1{"mlp.fc1.weight", "mlp.fc1.bias"};
  const std::vector<std::string> fc2{"mlp.fc2.weight", "mlp.fc2.bias"};
  auto join = [](std::initializer_list<std::vector<std::string>> parts) {
    std::vector<std::string> all;
    for (const auto& p : parts) all.insert(all.end(), p.begin(), p.end());
    return all;
  };
  CHECK(parameter_names(*make_block(NormKind::layernorm, 1e-4, true)) ==
        join({{"norm1.weight", "norm1.bias"},
              attn,
              {"ls1.gamma", "norm2.weight", "norm2.bias"},
              fc1,
              {"mlp.grn.gamma", "mlp.grn.beta"},
              fc2,
              {"ls2.gamma"}}));
  CHECK(parameter_names(*make_block(NormKind::learnable_scaler, 1e-4, true)) ==
        join({{"norm1.a", "norm1.b"},
              attn,
              {"ls1.gamma", "norm2.a", "norm2.b"},
              fc1,
              {"mlp.grn.gamma", "mlp.grn.beta"},
              fc2,
              {"ls2.gamma"}}));
  const auto plain = make_block(NormKind::layernorm, 0.0, false);
  CHECK(parameter_names(*plain) ==
        join({{"norm1.weight", "norm1.bias"}, attn, {"norm2.weight", "norm2.bias"}, fc1, fc2}));
  CHECK(!plain->has_layerscale());
  CHECK(plain->ls1() == nullptr);
  // Every 1-D parameter (norms, biases, gammas, GRN) is kept out of weight decay.
  for (const Parameter& p : make_block(NormKind::learnable_scaler, 0.1, true)->named_parameters())
    CHECK_MESSAGE(p.no_weight_decay == (p.tensor.dim() == 1), p.name);
}

TEST_CASE("Block computes x + ls1(attn(norm1(x))), then h + ls2(mlp(norm2(h)))") {
  for (NormKind norm : {NormKind::layernorm, NormKind::learnable_scaler})
    for (double ls : {0.0, 0.1}) {
      INFO("norm ", int(norm), ", layerscale ", ls);
      auto block = make_block(norm, ls, true);
      const Tensor x = variable({2, 5, 8}, 4).detach();
      const Tensor h = add(x, attn_branch(*block, x));
      CHECK(max_abs_diff((*block)(x), add(h, mlp_branch(*block, h))) < 1e-12);
    }
}

TEST_CASE("Block with LayerScale gamma = 0 is the identity on both branches") {
  auto block = make_block(NormKind::layernorm, 0.1, true);
  for (LayerScale* ls : {block->ls1(), block->ls2()}) {
    Tensor gamma = ls->gamma();
    for (int64_t i = 0; i < gamma.numel(); ++i) gamma.data<double>()[i] = 0;
  }
  const Tensor x = variable({2, 5, 8}, 5).detach();
  CHECK((*block)(x).to_vector() == x.to_vector());
}

TEST_CASE("Block with every option on passes gradcheck for x and every parameter") {
  for (NormKind norm : {NormKind::layernorm, NormKind::learnable_scaler}) {
    const char* what = norm == NormKind::layernorm
                           ? "Block (LayerNorm, LayerScale, GRN, drop-path in eval)"
                           : "Block (LearnableScaler, LayerScale, GRN, drop-path in eval)";
    auto block = make_block(norm, 0.1, true, 0.5, std::make_shared<Rng>(6), 0.4);
    block->eval();  // drop-path present but the identity, as in evaluation
    expect_module_gradients(what, *block, variable({2, 3, 8}, 7),
                            [&](const Tensor& x) { return (*block)(x); });
  }
}

TEST_CASE("Block in training drops each sample's branches with one draw per sample each") {
  auto drop_rng = std::make_shared<Rng>(8);
  auto block = make_block(NormKind::layernorm, 0.1, true, 0.5, drop_rng);
  const int64_t B = 16;
  const Tensor x = variable({B, 3, 8}, 9).detach();
  Rng replay(0);
  replay.set_state(drop_rng->state());
  const Tensor y = (*block)(x);
  // The masks the two DropPaths drew: B uniforms for the attention branch, then B for the MLP.
  auto draw_mask = [&] {
    std::vector<double> m(B);
    for (double& v : m) v = replay.uniform() < 0.5 ? 1.0 / 0.5 : 0.0;
    return from_vector(m, {B, 1, 1});
  };
  const Tensor m1 = draw_mask(), m2 = draw_mask();
  const Tensor h = add(x, mul(attn_branch(*block, x), m1));
  CHECK(max_abs_diff(y, add(h, mul(mlp_branch(*block, h), m2))) < 1e-12);
  CHECK(drop_rng->state() == replay.state());
  // With 16 samples and p = 0.5 both kept and dropped branches occur.
  const std::vector<double> masks = cat({m1, m2}, 0).to_vector();
  CHECK(std::count(masks.begin(), masks.end(), 0.0) > 0);
  CHECK(std::count(masks.begin(), masks.end(), 2.0) > 0);
}

TEST_CASE("Block counts its children's FLOPs plus the residual adds, as the forward records") {
  for (double ls : {0.0, 1e-4}) {
    INFO("layerscale ", ls);
    Rng rng(1);
    Block block(8, 2, 2.0, true, NormKind::layernorm, ls, true, 0.0, 0.0, rng, nullptr);
    // B=2, T=5 (80 elements): attention 7540 and the MLP with GRN 7600 (their own tests),
    // norms 2 * 8 * 80, residual adds 2 * 80, LayerScale 2 * 80 when on; fused or not.
    const double expected = 7540 + 7600 + 16 * 80 + 2 * 80 + (ls != 0 ? 2 * 80 : 0);
    for (bool fused : {true, false}) {
      INFO("fused ", fused);
      block.set_fused(fused);
      FlopCounter flops;
      block(zeros({2, 5, 8}));
      CHECK(flops.total() == expected);
    }
  }
}

TEST_CASE("apply_layerscale_to_blocks adds 2 x dim x depth parameters and keeps the others") {
  Stack model(3, NormKind::layernorm);
  model.eval();
  // state_dict() holds the live parameters (as PyTorch's does): keep a copy of the values.
  std::map<std::string, std::vector<double>> before;
  for (const auto& [name, tensor] : model.state_dict()) before[name] = tensor.to_vector();
  const int64_t count = model.num_parameters();
  nn::apply_layerscale_to_blocks(model, 1e-4);
  CHECK(model.num_parameters() == count + 2 * 8 * 3);
  const nn::StateDict after = model.state_dict();
  CHECK(after.size() == before.size() + 2 * 3);
  for (const auto& [name, values] : before) {
    REQUIRE_MESSAGE(after.count(name), name);
    CHECK_MESSAGE(after.at(name).to_vector() == values, name);
  }
  for (int64_t i = 0; i < 3; ++i)
    for (const char* ls : {"ls1", "ls2"}) {
      const std::string name = "blocks." + std::to_string(i) + "." + ls + ".gamma";
      REQUIRE_MESSAGE(after.count(name), name);
      CHECK(after.at(name).to_vector() == std::vector<double>(8, double(1e-4f)));
    }
  // timm's order inside a block: ls1 right after attn, ls2 right after the MLP.
  const std::vector<std::string> names = parameter_names(*model.blocks[0]);
  CHECK(names[6] == "ls1.gamma");
  CHECK(names.back() == "ls2.gamma");
  CHECK(!model.blocks[0]->ls1()->is_training());  // follows the block's mode
  // The new LayerScales are on the forward path: zero gammas make each block the identity.
  model.to(DType::f64);
  for (auto& block : model.blocks)
    for (LayerScale* ls : {block->ls1(), block->ls2()}) {
      Tensor gamma = ls->gamma();
      for (int64_t i = 0; i < gamma.numel(); ++i) gamma.data<double>()[i] = 0;
    }
  const Tensor x = variable({2, 4, 8}, 10).detach();
  CHECK((*model.blocks[1])(x).to_vector() == x.to_vector());
  // A second application finds every block done and changes nothing.
  nn::apply_layerscale_to_blocks(model, 0.5);
  CHECK(model.num_parameters() == count + 2 * 8 * 3);
}

TEST_CASE("Block rejects bad options and inputs with messages") {
  CHECK_THROWS_WITH_AS(make_block(NormKind::layernorm, 0.1, false)->add_layerscale(0.1),
                       "Block.add_layerscale: the block already has LayerScale", Error);
  CHECK_THROWS_WITH_AS(make_block(NormKind::layernorm, 0.0, false)->add_layerscale(0.0),
                       "Block.add_layerscale: init_value must not be 0", Error);
  Rng rng(1);
  CHECK_THROWS_WITH_AS(
      Block(10, 3, 2.0, true, NormKind::layernorm, 0.0, false, 0.0, 0.0, rng, nullptr),
      "Attention(dim=10, num_heads=3): dim must be a positive multiple of num_heads", Error);
  CHECK_THROWS_WITH_AS(
      Block(8, 2, 0.0, true, NormKind::layernorm, 0.0, false, 0.0, 0.0, rng, nullptr),
      "Block: mlp_ratio must be positive, got 0", Error);
  CHECK_THROWS_AS(Block(8, 2, 2.0, true, NormKind::layernorm, 0.0, false, 0.1, 0.0, rng, nullptr),
                  Error);  // drop-path needs a generator
  auto block = make_block(NormKind::layernorm, 0.1, true);
  CHECK_THROWS_WITH_AS((*block)(zeros({2, 5, 6}, DType::f64)),
                       doctest::Contains("input last axis is 6, expected 8"), Error);
}

TEST_CASE("Block with auxiliary losses: same output, extra = weighted hinge + peak terms") {
  auto owned = make_block(NormKind::learnable_scaler, 0.0, false);
  Block& block = *owned;
  Tensor x = variable({2, 5, 8}, 12).detach() * 3.0;
  const std::vector<double> plain = block.forward(x).to_vector();
  Tensor extra;
  nn::BlockAuxLoss aux{0.5, 2.0, 0.25};
  const std::vector<double> with = block.forward(x, aux, &extra).to_vector();
  REQUIRE(plain.size() == with.size());
  for (size_t i = 0; i < plain.size(); ++i)
    CHECK(with[i] == doctest::Approx(plain[i]).epsilon(1e-12));
  // Rebuild the expected value from the block's pieces.
  Tensor probs;
  Tensor branch = block.attn().forward(block.norm1()(x), &probs);
  Tensor h = x + branch;
  Tensor y = block.forward(x);
  const double want = 0.25 * attention_peak_loss(probs).item() +
                      0.5 * (feature_decay_loss(h, 2.0).item() + feature_decay_loss(y, 2.0).item());
  CHECK(want > 0);
  CHECK(extra.item() == doctest::Approx(want).epsilon(1e-12));
}

TEST_CASE("Block with no auxiliary weight leaves *extra undefined and the attention fused") {
  auto owned = make_block(NormKind::layernorm, 0.0, false);
  Block& block = *owned;
  Tensor extra;
  block.forward(variable({1, 3, 8}, 14).detach(), nn::BlockAuxLoss{}, &extra);
  CHECK_FALSE(extra.defined());
}

TEST_CASE("Block auxiliary losses: float64 gradient check over the input and every parameter") {
  auto owned = make_block(NormKind::learnable_scaler, 0.0, false);
  Block& block = *owned;
  Tensor x = variable({2, 4, 8}, 16);
  // A threshold that some |x| pass after each add; the kink and ties are measure-zero events
  // that the seeds here do not hit (the op tests check those points).
  expect_module_gradients("Block extra loss", block, x, [&](const Tensor& in) {
    Tensor extra;
    block.forward(in, nn::BlockAuxLoss{0.5, 1.5, 0.25}, &extra);
    return extra;
  });
}

TEST_CASE(
    "Block fused (norms inside qkv/fc1, LayerScale inside proj/fc2) equals the modules one by "
    "one") {
  // float32 at a ViT-like size: same output bits; gradients the same bits without LayerScale
  // and equal up to float32 rounding with it (its gradient is formed from dW's product).
  for (NormKind norm : {NormKind::layernorm, NormKind::learnable_scaler}) {
    for (double ls : {0.0, 0.1}) {
      for (bool grn : {false, true}) {
        const std::string what =
            cat_str(norm == NormKind::layernorm ? "layernorm" : "learnable_scaler", ", ls ", ls,
                    ", grn ", grn);
        INFO(what);
        Rng rng(5);
        Block block(48, 3, 4.0, true, norm, ls, grn, 0.0, 0.0, rng, nullptr);
        for (const auto& p : block.named_parameters()) {  // every parameter away from its init
          Tensor t = p.tensor;
          const Tensor noise = randn(t.shape(), rng) * 0.3;
          for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] += noise.data<float>()[i];
        }
        Rng data(7);
        const Tensor x0 = randn({3, 17, 48}, data), dy = randn({3, 17, 48}, data);
        std::vector<Tensor> results[2];
        int64_t held[2] = {0, 0};  // bytes the graph keeps between forward and backward
        for (bool fused : {true, false}) {
          block.set_fused(fused);
          block.zero_grad();
          Tensor x = x0.detach().clone().set_requires_grad();
          const int64_t before = memory_stats().bytes_in_use;
          Tensor y = block(x);
          held[fused ? 0 : 1] = memory_stats().bytes_in_use - before;
          y.backward(dy);
          std::vector<Tensor>& r = results[fused ? 0 : 1];
          r = {y.detach(), x.grad()};
          for (const auto& p : block.named_parameters()) r.push_back(p.tensor.grad());
        }
        CHECK(max_abs_diff(results[0][0], results[1][0]) == 0);
        // Fused, neither norm's output is kept (one token's worth each), nor, with LayerScale,
        // the two products it scales. (The MLP's own fusions run either way: mlp_test.cpp.)
        const int64_t token = 48 * 4, tokens = 3 * 17;
        const int64_t saved = tokens * token * (2 + (ls != 0 ? 2 : 0));
        INFO("held fused ", held[0], ", one by one ", held[1]);
        CHECK(held[1] - held[0] >= saved);
        for (size_t i = 1; i < results[0].size(); ++i) {
          const double scale = 1 + max_abs_diff(results[1][i], zeros_like(results[1][i]));
          const double diff = max_abs_diff(results[0][i], results[1][i]);
          INFO("result ", i, ": max |diff| ", diff, ", max |value| ", scale - 1);
          if (ls == 0)
            CHECK(diff == 0);
          else
            CHECK(diff / scale < 2e-5);
        }
      }
    }
  }
}

TEST_CASE("Block fused adds each residual in the branch's last op, with the add's bits in bf16") {
  // Without DropPath the MLP branch's gelu_linear returns h + ls2(...) itself; the output
  // keeps the bits of the modules one by one, whose products read the same bf16 operands.
  const testing::Bf16ModelWhereNeeded model;  // on a CPU without bf16 units
  const MatmulPrecisionGuard amp(MatmulPrecision::bf16);
  for (double ls : {0.0, 0.1}) {
    INFO("ls ", ls);
    Rng rng(9);
    Block block(48, 3, 4.0, true, NormKind::layernorm, ls, false, 0.0, 0.0, rng, nullptr);
    const Tensor x0 = randn({3, 17, 48}, rng), dy = randn({3, 17, 48}, rng);
    std::vector<Tensor> results[2];
    for (bool fused : {true, false}) {
      block.set_fused(fused);
      block.zero_grad();
      Tensor x = x0.detach().clone().set_requires_grad();
      Tensor y = block(x);
      CHECK(std::string(y.grad_fn()->op) == (fused ? "gelu_linear" : "add"));
      y.backward(dy);
      results[fused ? 0 : 1] = {y.detach(), x.grad()};
    }
    CHECK(max_abs_diff(results[0][0], results[1][0]) == 0);
    if (ls == 0) CHECK(max_abs_diff(results[0][1], results[1][1]) == 0);
  }
}

TEST_CASE("Block with an active DropPath adds the residual after it, as timm does") {
  Rng rng(10);
  Block block(8, 2, 2.0, true, NormKind::layernorm, 0.1, false, 0.5, 0.0, rng,
              std::make_shared<Rng>(3));
  const Tensor x = randn({2, 5, 8}, rng).set_requires_grad();
  CHECK(std::string(block(x).grad_fn()->op) == "add");
  block.eval();  // DropPath is the identity: the branch's own op adds the residual
  CHECK(std::string(block(x).grad_fn()->op) == "gelu_linear");
}
