#include "layers/fusion.h"

#include <doctest/doctest.h>

#include "engine/autograd/autograd.h"
#include "layers/layer_norm.h"
#include "tests/layers/module_gradcheck.h"

using namespace vg;
using vg::nn::LayerNorm;
using vg::nn::Mlp;
using vg::testing::randomize_parameters;

// The Block's fused and unfused branches are compared at a ViT-like size in block_test.cpp;
// these cases look at the MLP's act -> [GRN ->] fc2 fusion on its own.

TEST_CASE("mlp_branch without active dropout runs act, [GRN,] fc2 as one op, same bits") {
  for (bool use_grn : {false, true}) {
    INFO("use_grn ", use_grn);
    Rng rng(11);
    LayerNorm norm(16);
    Mlp mlp(16, 64, use_grn, 0.0, rng);
    mlp.to(DType::f64);
    randomize_parameters(mlp, 12);
    mlp.to(DType::f32);  // the vectorised float GELU, as in training
    const Tensor x0 = randn({3, 7, 16}, rng), dy = randn({3, 7, 16}, rng);
    std::vector<std::vector<double>> runs;
    for (bool fuse : {true, false}) {
      mlp.zero_grad();
      norm.zero_grad();
      Tensor x = x0.detach().clone().set_requires_grad();
      Tensor y = nn::mlp_branch(x, norm, mlp, nullptr, fuse);
      const char* fused_op = use_grn ? "gelu_grn_linear" : "gelu_linear";
      CHECK(std::string(y.grad_fn()->op) == (fuse ? fused_op : "linear"));
      y.backward(dy);
      std::vector<double> all = y.to_vector();
      std::vector<Tensor> grads{x.grad()};
      for (const auto& p : mlp.named_parameters()) grads.push_back(p.tensor.grad());
      for (const auto& p : norm.named_parameters()) grads.push_back(p.tensor.grad());
      for (const Tensor& t : grads)
        for (double e : t.to_vector()) all.push_back(e);
      runs.push_back(all);
    }
    CHECK(runs[0] == runs[1]);
  }
}

TEST_CASE("mlp_branch keeps GELU and fc2 apart where dropout acts between them") {
  Rng rng(13);
  LayerNorm norm(4);
  Mlp mlp(4, 8, false, 0.25, rng, std::make_shared<Rng>(14));
  const Tensor x = randn({2, 3, 4}, rng).set_requires_grad();
  // Training: drop2 -> fc2 -> drop1 -> act. Eval: both dropouts are the identity.
  const Tensor trained = nn::mlp_branch(x, norm, mlp, nullptr, true);
  REQUIRE(trained.grad_fn());
  CHECK(std::string(trained.grad_fn()->op) == "dropout");
  CHECK(std::string(trained.grad_fn()->inputs[0].node->op) == "linear");
  mlp.eval();
  CHECK(std::string(nn::mlp_branch(x, norm, mlp, nullptr, true).grad_fn()->op) == "gelu_linear");
}

TEST_CASE("A fused norm runs inside the linear that follows it, under that linear's path") {
  Rng rng(2);
  LayerNorm norm(8);
  nn::Attention attn(8, 2, true, rng);
  const Tensor x = randn({2, 5, 8}, rng).set_requires_grad();
  const Tensor y = nn::attention_branch(x, norm, attn, nullptr, nullptr, true);
  // proj's linear <- qkv_attention <- layer_norm_linear (recorded in qkv's scope).
  const auto& heads = y.grad_fn()->inputs[0].node;
  REQUIRE(heads);
  const auto& qkv = heads->inputs[0].node;
  REQUIRE(qkv);
  CHECK(std::string(qkv->op) == "layer_norm_linear");
  CHECK(qkv->module == "qkv");
  // Not fused, the norm is its own op and the attention's qkv a plain linear.
  const Tensor plain = nn::attention_branch(x, norm, attn, nullptr, nullptr, false);
  CHECK(std::string(plain.grad_fn()->inputs[0].node->inputs[0].node->op) == "linear");
}

TEST_CASE("A fused branch checks its input's channels like the modules do") {
  Rng rng(2);
  LayerNorm norm(8);
  nn::Attention attn(8, 2, true, rng);
  CHECK_THROWS_WITH_AS(nn::attention_branch(zeros({2, 5, 6}), norm, attn, nullptr, nullptr, true),
                       doctest::Contains("Attention(dim=8, num_heads=2): input last axis is 6"),
                       Error);
}
