// take_received_grad: a backward closure adds its gradient for an input into what that input
// has received so far, in place, and the engine counts the sum once.
#include <doctest/doctest.h>

#include <functional>
#include <vector>

#include "engine/autograd/autograd.h"
#include "engine/kernels/add_arrays.h"
#include "engine/ops/ops.h"
#include "tests/engine/bits_helpers.h"
#include "tests/engine/gradcheck_helpers.h"

using namespace vg;

namespace {

// y = 2x, whose backward takes x's received gradient when it can and returns received + 2g;
// `taken` records, per backward, whether it could.
Tensor twice_adding(const Tensor& x, std::vector<bool>* taken, Shape ask_shape = {}) {
  Tensor out = mul(x.detach(), 2.0);
  const Shape shape = ask_shape.empty() ? x.shape() : ask_shape;
  return record("twice_adding", out, {x}, [=](const Tensor& g) {
    const Tensor own = mul(g, 2.0);
    Tensor received = take_received_grad(0, shape, g.dtype());
    taken->push_back(received.defined());
    if (!received.defined()) return std::vector<Tensor>{own};
    kernels::add_arrays(received.data<double>(), own.data<double>(), received.data<double>(),
                        own.numel());
    return std::vector<Tensor>{received};
  });
}

Tensor leaf_values() {
  return from_vector(std::vector<double>{1, -2, 3}, {3}).set_requires_grad();
}

}  // namespace

// loss = sum(a * 2a) with a = 1.5x: mul's backward gives a its gradient 2a (a tensor of its
// own) before the op's backward runs, which adds its 2a: 4a * 1.5 in all.
TEST_CASE("a closure takes a gradient its input received first and the engine counts it once") {
  Tensor x = leaf_values();
  Tensor a = mul(x, 1.5);
  std::vector<bool> taken;
  sum(mul(a, twice_adding(a, &taken))).backward();
  CHECK(taken == std::vector<bool>{true});
  CHECK(x.grad().to_vector() == std::vector<double>{9, -18, 27});
}

TEST_CASE("nothing is taken where the engine must add: anomaly mode, a shared gradient, a leaf") {
  const std::vector<double> want{9, -18, 27};
  SUBCASE("anomaly mode checks the two gradients apart") {
    Tensor x = leaf_values();
    std::vector<bool> taken;
    {
      AnomalyGuard anomaly;
      Tensor a = mul(x, 1.5);
      sum(mul(a, twice_adding(a, &taken))).backward();
    }
    CHECK(taken == std::vector<bool>{false});
    CHECK(x.grad().to_vector() == want);
  }
  SUBCASE("add hands the closure the very tensor a received") {
    Tensor x = leaf_values();
    Tensor a = mul(x, 1.5);
    std::vector<bool> taken;
    sum(add(a, twice_adding(a, &taken))).backward();  // d/da = 1 + 2
    CHECK(taken == std::vector<bool>{false});
    CHECK(x.grad().to_vector() == std::vector<double>{4.5, 4.5, 4.5});
  }
  SUBCASE("a leaf's .grad stays the engine's") {
    Tensor x = leaf_values();
    std::vector<bool> taken;
    sum(mul(x, twice_adding(x, &taken))).backward();  // d/dx = 2x + 2x
    CHECK(taken == std::vector<bool>{false});
    CHECK(x.grad().to_vector() == std::vector<double>{4, -8, 12});
  }
  SUBCASE("a gradient of another shape") {
    Tensor x = leaf_values();
    Tensor a = mul(x, 1.5);
    std::vector<bool> taken;
    sum(mul(a, twice_adding(a, &taken, Shape{1, 3}))).backward();
    CHECK(taken == std::vector<bool>{false});
    CHECK(x.grad().to_vector() == want);
  }
  SUBCASE("outside a backward") {
    CHECK_FALSE(take_received_grad(0, {3}, DType::f64).defined());
  }
}

// x's gradient from the residual (mul's), then the norm's dx added into it in the norm's own
// pass: the bits of the two gradients made apart and added.
TEST_CASE("the norms, alone and before a linear, add dx into x's received gradient with add's bits") {
  Rng rng(7);
  const Tensor x0 = randn({6, 5, 24}, rng), w = randn({24}, rng), b = randn({24}, rng);
  const Tensor lw = randn({24, 24}, rng), lb = randn({24}, rng), g = randn({6, 5, 24}, rng);
  const std::vector<std::function<Tensor(const Tensor&)>> branches{
      [&](const Tensor& in) { return layer_norm(in, w, b, 1e-6); },
      [&](const Tensor& in) { return layer_norm_linear(in, w, b, 1e-6, lw, lb); },
      [&](const Tensor& in) { return channel_affine(in, w, b); },
      [&](const Tensor& in) { return affine_linear(in, w, b, lw, lb); }};
  for (size_t k = 0; k < branches.size(); ++k) {
    INFO("layer_norm, layer_norm_linear, channel_affine, affine_linear: ", k);
    const auto& branch = branches[k];
    // Together: y = a * branch(a), whose mul gives a its gradient before branch's backward.
    Tensor x = x0.clone().set_requires_grad();
    Tensor a = mul(x, 1.0);
    mul(a, branch(a)).backward(g);
    // Apart: a's gradient g * branch(a) from mul, and branch's dx for g * a.
    Tensor xa = x0.clone().set_requires_grad(), xb = x0.clone().set_requires_grad();
    mul(mul(xa, 1.0), branch(x0)).backward(g);
    branch(mul(xb, 1.0)).backward(mul(g, x0));
    CHECK(testing::same_bits(x.grad(), add(xa.grad(), xb.grad())));
  }
}

// The same graphs in float64, where each norm adds its dx into a's received gradient: central
// differences agree for x and every parameter.
TEST_CASE("gradcheck through the norms that add dx into a received gradient") {
  using testing::variable;
  const Tensor x = variable({2, 3, 6}, 11), w = variable({6}, 12, 1.0), b = variable({6}, 13);
  const Tensor lw = variable({6, 6}, 14), lb = variable({6}, 15);
  const std::vector<std::function<Tensor(const std::vector<Tensor>&)>> branches{
      [](auto& in) { return layer_norm(in[0], in[1], in[2], 1e-6); },
      [](auto& in) { return layer_norm_linear(in[0], in[1], in[2], 1e-6, in[3], in[4]); },
      [](auto& in) { return channel_affine(in[0], in[1], in[2]); },
      [](auto& in) { return affine_linear(in[0], in[1], in[2], in[3], in[4]); }};
  for (size_t k = 0; k < branches.size(); ++k) {
    INFO("layer_norm, layer_norm_linear, channel_affine, affine_linear: ", k);
    const auto& branch = branches[k];
    testing::expect_gradients(
        "a * branch(a)",
        [&](const std::vector<Tensor>& in) {
          const Tensor a = mul(in[0], 1.5);
          return mul(a, branch({a, in[1], in[2], in[3], in[4]}));
        },
        {x, w, b, lw, lb});
  }
}
