// The optimisers inside a training loop: accumulation, missing gradients, thread counts.
#include <doctest/doctest.h>

#include <tuple>

#include "engine/core/parallel.h"
#include "engine/ops/ops.h"
#include "engine/optim/adamw.h"
#include "engine/optim/clip.h"
#include "engine/optim/lamb.h"
#include "tests/engine/optim_helpers.h"

using namespace vg;
using namespace vg::optim;
using namespace vg::testing;

namespace {

// A small regression: loss = mean((tanh(x . w + b) - y)^2) over the rows [begin, end).
Tensor regression_loss(const Tensor& x, const Tensor& y, const Parameter& w, const Parameter& b,
                       int64_t begin, int64_t end) {
  const Tensor xs = slice(x, 0, begin, end), ys = slice(y, 0, begin, end);
  const Tensor pred = tanh(sum(xs * w.tensor, {1}) + b.tensor);
  return mean(pow(pred - ys, 2.0));
}

}  // namespace

TEST_CASE("gradient accumulation over k micro-batches (loss/k each) equals one big batch") {
  Rng rng(5);
  const Tensor x = randn({8, 4}, rng, DType::f64), y = randn({8}, rng, DType::f64);
  for (int64_t k : {2, 4}) {
    INFO("k = ", k, " micro-batches");
    Parameter w1 = random_param("w", {4}, 9), b1 = make_param("b", {0.1}, {1}, true);
    Parameter w2 = random_param("w", {4}, 9), b2 = make_param("b", {0.1}, {1}, true);
    regression_loss(x, y, w1, b1, 0, 8).backward();
    const int64_t micro = 8 / k;
    for (int64_t i = 0; i < k; ++i)  // .grad accumulates across the backward() calls
      (regression_loss(x, y, w2, b2, i * micro, (i + 1) * micro) / double(k)).backward();
    const std::vector<double> big = w1.tensor.grad().to_vector(),
                              acc = w2.tensor.grad().to_vector();
    for (size_t i = 0; i < big.size(); ++i) CHECK(acc[i] == doctest::Approx(big[i]).epsilon(1e-12));
    CHECK(b2.tensor.grad().item() == doctest::Approx(b1.tensor.grad().item()).epsilon(1e-12));

    // and the optimiser step that follows is the same
    AdamW opt1({make_group("decay", {w1}, 0.01, 0.1), make_group("no_decay", {b1}, 0.01)});
    AdamW opt2({make_group("decay", {w2}, 0.01, 0.1), make_group("no_decay", {b2}, 0.01)});
    opt1.step();
    opt2.step();
    for (size_t i = 0; i < 4; ++i)
      CHECK(values(w2)[i] == doctest::Approx(values(w1)[i]).epsilon(1e-12));
  }
}

TEST_CASE("parameters without a gradient are skipped: values and state stay as they were") {
  Parameter a = make_param("a", {1.0, 2.0}, {2}), b = make_param("b", {3.0}, {1});
  AdamW opt({make_group("decay", {a, b}, 0.1, 0.1)});
  set_grad(a, {1.0, -1.0});
  opt.step();
  CHECK(values(b)[0] == 3.0);  // no decay either: PyTorch skips the whole update
  CHECK(values(a)[0] != 1.0);
  const auto state = opt.state_to_json()["state"];
  CHECK(state["a"]["step"] == 1);
  CHECK(state["b"]["step"] == 0);
  CHECK(state["b"]["exp_avg"].is_null());
  // The per-parameter step counter then drives b's bias correction from 1, as in PyTorch.
  opt.zero_grad();
  set_grad(b, {0.5});
  opt.step();
  CHECK(values(b)[0] == doctest::Approx(3.0 * (1 - 0.01) - 0.1 * 0.5 / (0.5 + 1e-8)));
}

TEST_CASE("optimiser steps and norms give the same bits with 1 and 2 threads") {
  const int previous = num_threads();
  const auto run = [](int threads) {
    set_num_threads(threads);
    Parameter w = random_param("w", {300, 200}, 1, false, DType::f32);
    Parameter b = random_param("b", {70000}, 2, true, DType::f32);
    Rng rng(3);
    Lamb opt({make_group("decay", {w}, 0.01, 0.02), make_group("no_decay", {b}, 0.01)});
    double norm = 0;
    for (int step = 0; step < 3; ++step) {
      w.tensor.set_grad(randn({300, 200}, rng));
      b.tensor.set_grad(randn({70000}, rng));
      norm += clip_grad_norm({w, b}, 200.0);
      opt.step();
    }
    return std::make_tuple(w.tensor.clone(), b.tensor.clone(), norm, opt.last_grad_norm());
  };
  const auto [w1, b1, n1, g1] = run(1);
  const auto [w2, b2, n2, g2] = run(2);
  set_num_threads(previous);
  CHECK(same_bits(w1, w2));
  CHECK(same_bits(b1, b2));
  CHECK(n1 == n2);
  CHECK(g1 == g2);
}
