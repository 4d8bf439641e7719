#include "layers/mlp.h"

#include <doctest/doctest.h>

#include "engine/autograd/autograd.h"
#include "tests/layers/module_gradcheck.h"

using namespace vg;
using vg::nn::Mlp;
using vg::testing::expect_module_gradients;
using vg::testing::max_abs_diff;
using vg::testing::randomize_parameters;
using vg::testing::variable;

namespace {

// GRN over the token axis of (B, T, C), op by op: every token takes part, the first (cls)
// included.
Tensor token_grn(const Tensor& h, const Tensor& gamma, const Tensor& beta) {
  const Tensor g = sqrt(sum(mul(h, h), {1}, true));
  const Tensor n = div(g, add(mean(g, {-1}, true), 1e-6));
  return add(add(mul(gamma, mul(h, n)), beta), h);
}

}  // namespace

TEST_CASE("Mlp has fc1 [hidden, dim], then grn.gamma/beta (hidden) when asked, then fc2") {
  Rng rng(1);
  Mlp plain(8, 32, false, 0.0, rng);
  std::vector<std::string> names;
  for (const Parameter& p : plain.named_parameters()) names.push_back(p.name);
  CHECK(names == std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"});
  CHECK(plain.fc1().weight().shape() == Shape{32, 8});
  CHECK(plain.fc2().weight().shape() == Shape{8, 32});
  CHECK(plain.grn() == nullptr);

  Mlp with_grn(8, 32, true, 0.0, rng);
  names.clear();
  for (const Parameter& p : with_grn.named_parameters()) {
    names.push_back(p.name);
    if (p.name.rfind("grn.", 0) == 0) {
      CHECK(p.no_weight_decay);
      CHECK(p.tensor.shape() == Shape{32});
      CHECK(p.tensor.to_vector() == std::vector<double>(32, 0.0));
    }
  }
  CHECK(names == std::vector<std::string>{"fc1.weight", "fc1.bias", "grn.gamma", "grn.beta",
                                          "fc2.weight", "fc2.bias"});
  CHECK(with_grn.num_parameters() == plain.num_parameters() + 2 * 32);
}

TEST_CASE("Mlp is fc2(GRN(GELU(fc1(x)))) with GRN reducing over the tokens, cls included") {
  for (bool use_grn : {false, true}) {
    INFO("use_grn ", use_grn);
    Rng rng(2);
    Mlp mlp(6, 12, use_grn, 0.0, rng);
    mlp.to(DType::f64);
    randomize_parameters(mlp, 3);
    const Tensor x = variable({2, 5, 6}, 4).detach();
    Tensor h = gelu(linear(x, mlp.fc1().weight(), mlp.fc1().bias()));
    if (use_grn) h = token_grn(h, mlp.grn()->gamma(), mlp.grn()->beta());
    const Tensor expected = linear(h, mlp.fc2().weight(), mlp.fc2().bias());
    CHECK(max_abs_diff(mlp(x), expected) < 1e-12);
  }
}

TEST_CASE("Mlp with GRN: token 0 (the cls token) takes part in every token's norm") {
  Rng rng(5);
  Mlp mlp(4, 8, true, 0.0, rng);
  mlp.to(DType::f64);
  randomize_parameters(mlp, 6);
  Tensor x = variable({1, 3, 4}, 7).detach();
  const Tensor before = mlp(x);
  x.set_at({0, 0, 1}, x.at({0, 0, 1}) + 0.5);
  const Tensor after = mlp(x);
  // Without GRN the MLP acts token by token; with it token 2 sees the change of token 0.
  CHECK(max_abs_diff(select(before, 1, 2), select(after, 1, 2)) > 1e-6);
}

TEST_CASE("Mlp runs its modules one by one: fc1, act, [GRN,] fc2 (fused only inside a Block)") {
  for (bool use_grn : {false, true}) {
    INFO("use_grn ", use_grn);
    Rng rng(11);
    Mlp mlp(4, 8, use_grn, 0.0, rng);
    const Tensor y = mlp(randn({2, 3, 4}, rng).set_requires_grad());
    REQUIRE(y.grad_fn());
    CHECK(std::string(y.grad_fn()->op) == "linear");
    CHECK(y.grad_fn()->module == "fc2");
  }
}

TEST_CASE("Mlp passes gradcheck for the input and every parameter, with and without GRN") {
  for (bool use_grn : {false, true}) {
    INFO("use_grn ", use_grn);
    Rng rng(8);
    Mlp mlp(4, 8, use_grn, 0.0, rng);
    mlp.to(DType::f64);
    randomize_parameters(mlp, 9);
    expect_module_gradients(use_grn ? "Mlp with GRN" : "Mlp", mlp, variable({2, 3, 4}, 10),
                            [&](const Tensor& x) { return mlp(x); });
  }
}

TEST_CASE("Mlp counts fc1, GELU, GRN and fc2, as the forward records") {
  Rng rng(1);
  Mlp mlp(8, 16, true, 0.0, rng);
  // rows = 2*5: fc1 2*10*8*16 + 10*16, GELU 8*10*16, GRN 6*10*16, fc2 2*10*16*8 + 10*8.
  const double expected = (2560 + 160) + 1280 + 960 + (2560 + 80);
  FlopCounter flops;
  mlp(zeros({2, 5, 8}));
  CHECK(flops.total() == expected);
}

TEST_CASE("Mlp without GRN counts fc1, GELU and fc2, as the forward records") {
  Rng rng(1);
  Mlp mlp(8, 16, false, 0.0, rng);
  const double expected = (2560 + 160) + 1280 + (2560 + 80);
  FlopCounter flops;
  mlp(zeros({2, 5, 8}));
  CHECK(flops.total() == expected);
}

TEST_CASE("Mlp rejects an input whose last axis is not dim") {
  Rng rng(1);
  Mlp mlp(8, 16, true, 0.0, rng);
  CHECK_THROWS_WITH_AS(mlp(zeros({2, 5, 4})), doctest::Contains("input last axis is 4, expected 8"),
                       Error);
}
